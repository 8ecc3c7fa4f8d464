// SPDX-License-Identifier: Apache-2.0
// Minimal .npy reader for little-endian float32 or int64 (token ids) C-order arrays; returns
// { data, dims, type } with type 'float32' or 'int64', as onnxruntime's Tensor takes them.
'use strict';
const fs = require('fs');

function readNpy(path) {
  const buf = fs.readFileSync(path);
  if (buf.toString('latin1', 1, 6) !== 'NUMPY') throw new Error(`${path}: not a .npy file`);
  const major = buf[6];
  const hlen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const start = major === 1 ? 10 + hlen : 12 + hlen;
  const header = buf.toString('latin1', start - hlen, start);
  const int64 = /'descr':\s*'<i8'/.test(header);
  if (!(int64 || /'descr':\s*'<f4'/.test(header)) || /'fortran_order':\s*True/.test(header)) {
    throw new Error(`${path}: only little-endian float32 or int64 C-order arrays are supported: ${header}`);
  }
  const m = header.match(/'shape':\s*\(([^)]*)\)/);
  const dims = m[1].split(',').map((s) => s.trim()).filter((s) => s).map(Number);
  const n = dims.reduce((a, b) => a * b, 1);
  if (int64) {
    const data = new BigInt64Array(n);
    for (let i = 0; i < n; i++) data[i] = buf.readBigInt64LE(start + 8 * i);
    return { data, dims, type: 'int64' };
  }
  const data = new Float32Array(n);
  for (let i = 0; i < n; i++) data[i] = buf.readFloatLE(start + 4 * i);
  return { data, dims, type: 'float32' };
}

module.exports = { readNpy };
