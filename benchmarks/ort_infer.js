// SPDX-License-Identifier: Apache-2.0
// ONNX Runtime (npm onnxruntime-node, CPU) inference timing for bench_infer.py.
//   node benchmarks/ort_infer.js MODEL.onnx BATCH_INPUT.npy ITERS THREADS [REPEATS]
// Feeds the .npy (float32, or int64 token ids) to the model's first input, warms up, then prints one line per
// repeat: "ort: ITERS runs, SECONDS s, RATE runs/s, SAMPLES samples/s" (samples = runs x the
// input's first dimension).
'use strict';
const path = require('path');
const ort = require('onnxruntime-node');
const { readNpy } = require(path.join(__dirname, 'npy.js'));

async function timeRuns(session, feeds, iters) {
  const start = process.hrtime.bigint();
  for (let i = 0; i < iters; i++) await session.run(feeds);
  return Number(process.hrtime.bigint() - start) / 1e9;
}

async function main() {
  const [model, input, itersArg, threadsArg, repeatsArg] = process.argv.slice(2);
  if (!threadsArg) {
    console.error('usage: node ort_infer.js MODEL.onnx BATCH_INPUT.npy ITERS THREADS [REPEATS]');
    process.exit(2);
  }
  const iters = Number(itersArg), repeats = Number(repeatsArg || 1);
  const session = await ort.InferenceSession.create(model, {
    executionProviders: ['cpu'],
    intraOpNumThreads: Number(threadsArg),
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
  });
  const x = readNpy(input);
  const feeds = { [session.inputNames[0]]: new ort.Tensor(x.type, x.data, x.dims) };
  await timeRuns(session, feeds, Math.max(3, Math.floor(iters / 10)));  // warm-up
  for (let r = 0; r < repeats; r++) {
    const s = await timeRuns(session, feeds, iters);
    console.log(`ort: ${iters} runs, ${s.toFixed(6)} s, ${(iters / s).toFixed(3)} runs/s, ` +
      `${(iters * x.dims[0] / s).toFixed(1)} samples/s`);
  }
}

main().catch((e) => { console.error(`ort_infer: ${e.message || e}`); process.exit(1); });
