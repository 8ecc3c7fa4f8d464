#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A model zoo: models as PyTorch users write them, exported the way they export them, run and
trained by `of` and compared with PyTorch.

  zoo.py --bin BUILD/cli --work DIR [--opset N] MODEL CHECK
  zoo.py --list

Every model is small, built after torch.manual_seed(0), float32, batch 4:
  linear3d      Linear(16,32) -> GELU -> Linear(32,8) on [4,5,16] (a Linear on a 3-D input:
                MatMul, not Gemm); trained through a wrapper that reshapes the output to [20,8],
                with 5 class ids per sample (labels [n,5]).
  mlp_nobias    Linear(16,32,bias=False) -> ReLU -> Linear(32,10) on [4,16].
  resnet18      torchvision resnet18(num_classes=10) on [4,3,64,64] (BatchNorm).
  resnet50      torchvision's ResNet with resnet50's Bottleneck blocks, one per stage instead of
                (3,4,6,3), num_classes=10, on [4,3,64,64].
  mobilenet_v2  torchvision mobilenet_v2(num_classes=10, width_mult=0.25) on [4,3,64,64]
                (ReLU6, depthwise convolutions). Built with dropout=0.0 instead of torchvision's
                0.2: a random dropout mask cannot be matched step for step.
  gpt           a nanoGPT-style model: token + position embeddings (torch.arange), 2 pre-LN blocks
                with a fused qkv Linear split in three, a causal mask buffer applied with
                masked_fill(-inf), GELU MLP, Dropout(0.0), an untied head; vocab 64, width 32,
                4 heads, 16 tokens; logits [64,64]. Trained on a token file (next-token labels).
  nanogpt       the gpt with nanoGPT's own mask: a float tril buffer "bias" [1,1,16,16] applied with
                masked_fill(bias[:, :, :t, :t] == 0, -inf) (a comparison of a float buffer: ofc folds it),
                and trained with nanoGPT's param groups: no weight decay on biases and LayerNorm
                weights (ofc --no-weight-decay-1d; AdamW's weight_decay 1.0, so that 5 steps of it
                show in the LayerNorm weights: 0.5%), and nanoGPT's get_lr schedule (warm-up (it+1)/(W+1), cosine to lr/10:
                ofc --schedule cosine:warmup=2,start=1/3,min_lr=lr/10).
  pos_encoding  PyTorch's nn.Transformer language-modelling tutorial model (sequence-first
                nn.TransformerEncoder, 2 layers, width 32, 2 heads; embeddings times sqrt(32) plus a
                sinusoid table registered as a buffer; a float causal mask buffer) on tokens [4,16]:
                the buffers must not train (exported with scripts/of_export.py, as every model here);
                trained as the tutorial trains it, with clip_grad_norm_(model.parameters(), 0.5)
                before each step (ofc --clip-grad-norm 0.5), and its StepLR (here every 2 steps by 0.5:
                ofc --schedule step:size=2,gamma=0.5).
  finetune      torchvision's fine-tuning recipe: resnet18 with requires_grad = False on every
                parameter and a new nn.Linear(512, 10) head, on [4,3,64,64] (only the head trains;
                the BatchNorms' running statistics still move).
  padded_lm     nn.Embedding(8, 16, padding_idx=0), nn.GRU(16, 16, batch_first), nn.Linear(16, 8)
                per token, on tokens [4,16] below 8 (an eighth of them the padding token): the
                padding row must not train (scripts/of_export.py lists it; the exporter drops it).
  llama         a LLaMA-style decoder as Karpathy's llama2.c model.py writes it: RMSNorm
                (x * rsqrt(mean(x^2) + eps)), rotary embeddings from cos/sin tables registered as
                non-persistent buffers (real arithmetic on unbind/stack pairs), grouped-query
                attention (4 heads, 2 key/value heads: repeat_kv's expand + reshape), a float -inf
                triu mask buffer, SwiGLU feed-forward (silu(w1 x) * w3 x), the head tied to the
                embeddings; width 32, 2 layers, vocab 64, 16 tokens (logits of every position).
  gpt_llrd      the gpt fine-tuned as BERT recipes do: layer-wise lr decay (blocks.1 at 0.8 x lr,
                blocks.0 at 0.64, the embeddings at 0.512: ofc --param-lr GLOB=LR, torch param
                groups) under transformers' linear schedule with 2 warm-up steps (--schedule linear:warmup=2).
  stop_gradient SimSiam's step on the two halves of a [4,16] sample: a shared encoder (Linear, BatchNorm1d,
                ReLU, Linear, BatchNorm1d without affine) and predictor, the symmetric negative cosine
                against the detached projections, plus an online linear probe on detached features
                (of.StopGradient, as scripts/of_export.py writes .detach(); each BatchNorm called twice).
  quant_aware   quantization-aware training written by hand: conv activations fake-quantized to 4 bits
                (round, clamp) and binary conv weights with XNOR-Net's scale (sign), each through a
                straight-through estimator x + (q - x).detach(); nn.LPPool2d (sign on the gradient
                path); h - floor(h) and ceil(4h)/4 beside h into the classifier, on [4,3,8,8].
  vq_vae        a VQ-VAE step on [4,16]: two 4-wide latents per sample take their nearest codebook entry
                (argmin of squared distances, an nn.Embedding(12,4) lookup), codebook and commitment
                losses with .detach(), a straight-through estimator into the decoder, a linear probe.
  mixup         bn_cnn trained as torchvision's recipe with --mixup-alpha: nn.CrossEntropyLoss (class
                weights) against class probabilities lam * one_hot(a) + (1 - lam) * one_hot(b).
  focal         an MLP trained with torchvision.ops.sigmoid_focal_loss against F.one_hot(label, 10).float()
                (OneHot, then RetinaNet's alpha 0.25, gamma 2).
  moe           a top-2 mixture of 4 GELU-MLP experts on [4,16] (torch.topk over the router's logits, a
                softmax over the two, F.one_hot of the choices spreading the gates) with Switch's
                load-balancing term.
  actor_critic  an advantage actor-critic's loss on [4,16]: logp.gather(1, actions) of a log_softmax with an
                invalid action masked to -inf (GatherElements with run-time indices), the advantage
                detached in the policy term, the value's squared error, an entropy bonus.
  weight_norm   a MelGAN/HiFi-GAN-style Conv1d stack (dilated residual, strided) and a Linear head, each with
                nn.utils.weight_norm (weight_g and weight_v train), LeakyReLU(0.2), on [4,4,16].
  l1_norms      F.normalize(p=1) and x.norm(p=1, dim) (ReduceL1) over rows with a zeroed group, on [4,16].
  bn_batch_stats
                bn_cumulative's layers with BatchNorm2d/1d(track_running_stats=False): batch statistics
                in train and eval mode, no running ones (the export computes them for the node).
  bn_cumulative Conv(3,8)-BatchNorm2d(momentum=None)-ReLU-pool-Linear(8,16)-BatchNorm1d(momentum=None)-
                ReLU-Linear(16,10) on [4,3,8,8]: running statistics are the average of every batch's
                (scripts/of_export.py lists them; the export alone says momentum 1.0).
  gpt_tied      the gpt with nanoGPT's tied head (head.weight is wte.weight): the export and the
                checkpoint hold one tensor, which this test loads under both names.
  encoder       nn.TransformerEncoder (2 layers, width 32, 4 heads, feed-forward 64, batch_first)
                on [4,8,32], mean over the sequence, Linear(32,10).
  encoder_seq_first
                the same with batch_first=False (the input transposed to [8,4,32] in forward).
  mobilenet_v3_small, mobilenet_v3_large
                torchvision's, num_classes=10, width_mult=0.25, dropout=0.0, on [4,3,64,64]
                (HardSwish, HardSigmoid, squeeze-excite).
  efficientnet_b0
                torchvision's EfficientNet with efficientnet_b0's blocks at width 0.25 and depth
                0.5, stochastic_depth_prob=0.0 (training draws are not torch's: test/e2e/structured_dropout_check.py),
                dropout=0.0, on [4,3,64,64] (SiLU, squeeze-excite).
  vit           torchvision's VisionTransformer (vit_b_16's code) sized down: 32 px, patch 8,
                2 layers, width 32, 4 heads, MLP 64 (the class token read back with x[:, 0]: a
                Gather on axis 1); its zero-initialized head gets random weights. Trained with
                label smoothing 0.11, as torchvision's recipe trains ViTs (both sides).
  convnext      torchvision's ConvNeXt (convnext_tiny's code) with stages (16,32,64) of one
                block each, stochastic_depth_prob=0.0, on [4,3,32,32] (LayerNorm2d, 7x7 depthwise
                convolutions, Linear on NHWC, layer scale).
  decoder       nn.TransformerDecoder (2 layers, width 32, 4 heads, batch_first=False) over a
                learned memory, with a causal tgt_mask built in forward (torch.triu: Trilu).
  decoder_batch_first
                the same with batch_first=True.
  mha           nn.MultiheadAttention(32, 4, batch_first=True) alone, then Linear(32,10).
  gelu_tanh     Linear(16,32) -> GELU(approximate="tanh") -> Linear(32,10).
  lstm, gru     nn.LSTM / nn.GRU(16, 24, num_layers=2, batch_first=True) on [4,6,16], the last
                step's output, Linear(24,10).
                gru trains with torch.nn.utils.clip_grad_value_(params, 0.02) (ofc --clip-grad-value).
  lstm_bi, gru_bi
                one bidirectional layer (batch_first=False) started from learned initial states
                (h0, and c0 for the LSTM), the mean over the sequence, Linear(48,10).
  nan_to_num    tabular features with NaN and +-inf (every 7th, 11th, 13th value): the count of
                missing values per row (torch.isnan), torch.nan_to_num, a torch.isfinite mask of
                the row, torch.isinf, then an MLP (IsNaN, IsInf as comparisons).
  bucketize     float features turned into embedding ids at run time, as tabular and
                recommendation models embed a continuous feature by its bucket: (sigmoid(x) * 8)
                .long() and torch.floor(2 * x).long() clamped to [-4, 3], shifted (Cast f32 to
                int64), two nn.Embedding lookups beside an MLP of the raw features.
  scatter       a graph network's message passing as torch_geometric-style code writes it by
                hand, on 6 nodes and 10 fixed edges (repeated targets): messages gathered at the
                sources (index_select), summed at the targets (index_add), nodes scored and their
                best one picked as a one-hot (argmax, scatter_ of ones), and node features pooled
                into 3 clusters computed at run time (scatter_add); at opset 16, where
                ScatterElements adds (below it torch writes both sums without, which ofc refuses).
  rnn           nn.RNN (Elman): two tanh layers (16 -> 24, batch_first=True), then a bidirectional
                nonlinearity="relu" layer (24 -> 12) from a learned h0; Linear(24,10) of the mean
                over the sequence plus the final states (ONNX RNN, Y and Y_h both trained through).
  video         a video classifier on [4,3,8,32,32] (8 frames) from torchvision's video ResNet
                blocks (r3d_18's Conv3DSimple, r2plus1d_18's Conv2Plus1D) between an nn.Conv3d
                stem, nn.BatchNorm3d, nn.MaxPool3d((1,3,3)), nn.AvgPool3d without padded counts,
                a ceil-mode nn.MaxPool3d(2) and nn.AdaptiveAvgPool3d(1) (3-D pooling: two 2-D stages).
  unet3d        a 3-D U-Net's shape on [4,2,8,12,12] (volumetric segmentation): Conv3d encoder,
                MaxPool3d(2) down, nn.ConvTranspose3d(16,8,3,stride=2,padding=1,output_padding=1) up
                beside a trilinear F.interpolate(scale_factor=2), the skip concatenated, a 1x1x1
                head resized to (5,7,9) (nearest, by sizes), averaged over the volume.
  exported_losses
                an MLP returning its own loss: the sum of F.mse_loss, l1_loss,
                smooth_l1_loss, huber_loss, binary_cross_entropy, soft_margin_loss,
                margin_ranking_loss, hinge_embedding_loss, cosine_embedding_loss, poisson_nll_loss
                on multi-hot targets (none of which torch 1.13 exports; scripts/of_export.py does).
  exported_layers
                Conv2d, nn.AdaptiveAvgPool2d((3,3)) of a 7x7 map,
                nn.Threshold(0.1, -1.0), nn.Bilinear(16,12,10), on [4,3,7,7] (layers torch 1.13
                cannot export; scripts/of_export.py writes them out).
  linear_attention
                causal linear attention on [4,6,8]: (q @ k^T).tril() @ v (Trilu of activations),
                then torch.clamp(h, min=alpha - 1, max=alpha) with a learned 0-d alpha (PACT; Clip
                with bounds computed at run time).
  recommender   a DLRM-style recommender on [4,14]: nn.EmbeddingBag sum with per_sample_weights
                (3 ids hashed by `% 12`), mean with padding_idx=0 (5 ids), max (2 ids), and mean over bags of
                uneven lengths (a 1-D input with offsets: at opset 16, ScatterElements adds), ids
                made from the float features, beside an MLP of the dense ones plus
                torch.fmod(dense * 3, 1.0).
  gem           a small CNN on [4,3,8,8] pooled by GeM (generalized mean with a learned exponent
                p, as image retrieval pools: x.clamp(min=eps).pow(p), avg_pool2d, .pow(1 / p)):
                Pow with a tensor exponent, its gradient to p.
  metric_learning
                re-identification's softmax + triplet loss on an MLP embedding: cross-entropy of a
                head, F.triplet_margin_loss (p=2; p=3 with swap) against the reversed features
                and the next sample, F.pairwise_distance (p=1) to a learned center (train checks
                only: the negatives couple the batch).
  lrn           a CNN on [4,3,8,8] with nn.LocalResponseNorm (AlexNet's size 5, alpha 1e-4, k 2; and
                size 3, alpha 1, k 1): torch exports its squeeze as an If whose condition ofc folds.
  exported_math an MLP on [4,16] through Tensor.unflatten, torch.logaddexp, expm1, hypot, frac, xlogy
                (an entropy; x = 0 where a ReLU is off), diff, logcumsumexp and diag_embed, which of_export
                writes out.
  densenet      torchvision's DenseNet (densenet121's code) with growth 8, blocks (2,2,2) and 16
                initial features, on [4,3,32,32] (concatenated features; its transitions' AvgPool2d,
                which torch exports as a Pad of zeros before the AveragePool).
  pads          the padding modules on [4,3,8,8]: Conv(3,8,3,padding=1) -> ReLU ->
                ReflectionPad2d(2) -> Conv(8,8,5) -> ReLU ->
                ReplicationPad2d((1,2,0,1)) -> Conv(8,8,3) -> ReLU -> ZeroPad2d(1) -> AvgPool2d(2),
                then F.pad(x, (0, 1), value=0.5) and Linear(192,10) (ONNX Pad in its reflect, edge
                and constant modes).
  swin          torchvision's SwinTransformer (swin_t's code) sized down: 32 px, patch 4, width 16,
                depths (2,2), heads (2,4), window 4, stochastic_depth_prob=0.0, on [4,3,32,32]
                (shifted windows: torch.roll, an attention mask built with Mod and ScatterND, which
                fold; patch merging's x[..., 0::2, 0::2, :], a strided Slice at run time).
  pointwise     the element-wise math a model writes, on [4,16]: Linear(16,16), sin of half its
                features and cos of the other half, Linear(16,32) -> F.elu(alpha=0.5) -> Linear -> F.softplus ->
                Linear -> F.mish, then log(|h| + 1).sum(dim=1), |h|.sum(dim=1) and h.std(dim=1)
                beside h into Linear(35,10) (Sin, Cos, Elu, Softplus, Log, Abs, ReduceSum; std's
                element count, a ReduceProd of the shape, folds).
  conv1d        a 1-D CNN over sequences, on [4,4,32]: Conv1d(4,16,5,padding=2,bias=False) ->
                BatchNorm1d -> ReLU
                -> MaxPool1d(2) -> Conv1d(16,16,3,stride=2,dilation=2,padding=2) -> ReLU ->
                AvgPool1d(2) -> AdaptiveAvgPool1d(1) -> Linear(16,10).
  unet          a small U-Net on [4,3,16,16]: two Conv2d+ReLU downsampling steps (stride 2), a
                ConvTranspose2d(16,8,3,stride=2,padding=1,output_padding=1) back up, its output
                concatenated with the skip, a ConvTranspose2d(16,8,2,stride=2,groups=2), a
                ConvTranspose1d(8,4,3,stride=2) over the flattened rows, then Linear(.,10)
                (ONNX ConvTranspose: output_padding, groups, bias, 1-D).
  upsample      nn.Upsample and F.interpolate between convolutions on [4,3,6,6]: nearest x2,
                bicubic x0.5, bilinear x2 (align_corners=False), bicubic to a size
                (align_corners=True), bilinear to a size (align_corners=True), then
                linear x2 over the flattened rows, and Linear(.,10) (ONNX Resize).
  norms         GroupNorm and InstanceNorm as convolutional nets use them, on [4,3,8,8]:
                Conv(3,8) -> GroupNorm(2,8) -> ReLU -> Conv(8,8) -> InstanceNorm2d(8) (no affine) ->
                ReLU -> Conv(8,8) -> InstanceNorm2d(8, affine=True) -> ReLU -> AdaptiveAvgPool ->
                Linear(8,10) (ONNX
                InstanceNormalization: GroupNorm's with a constant unit scale, the affine ones
                with parameters).
  maxpool_time  a text-CNN-style max over time, on [4,4,16]: Conv1d(4,8,3) -> ReLU, then
                torch.max(h, dim=2).values beside torch.amax(h, dim=1) (over channels, of the
                positions) into Linear(8+14,10) (ONNX ReduceMax).
  bn_cnn        Conv(3,8)-BatchNorm-ReLU-Conv(8,8)-BatchNorm-ReLU-AdaptiveAvgPool-Linear(8,10) on
                [4,3,8,8]: small and well conditioned, for the data-parallel BatchNorm check.
  segment       torchvision's lraspp_mobilenet_v3_large (num_classes=4) on a 0.25-wide dilated
                backbone, on [4,3,64,64]: logits [4,4,64,64], a class per pixel (labels [n,64,64]:
                per-pixel cross-entropy, as F.cross_entropy takes [N,C,H,W] with [N,H,W]); every
                7th pixel is 255, a void label that ignore_index=255 leaves out on both sides.
  shufflenet    torchvision shufflenet_v2_x0_5(num_classes=10) on [4,3,64,64] (channel shuffle: a
                view, transpose and view between branches; channel splits with chunk).

Models that return their own loss (forward(input, label) -> loss, exported with both inputs named
"input" and "label", trained by ofc --loss output; training checks only):
  weighted_ce   bn_cnn through nn.CrossEntropyLoss(weight=linspace(0.5, 2, 10)): class weights,
                a weighted mean (torch's SoftmaxCrossEntropyLoss export with its weight input).
  summed_ce     Linear(16,32)-GELU-Linear(32,10) through nn.CrossEntropyLoss(reduction="sum",
                ignore_index=3): a sum, whose rows of class 3 count nowhere; on 2 devices the whole
                batch's sum (the ranks' sums added, where DDP would average them).
  deeplab_aux   torchvision's deeplabv3_mobilenet_v3_large (num_classes=4, aux_loss=True) on a
                0.25-wide backbone, on [4,3,64,64], trained as torchvision's reference script trains
                it: F.cross_entropy(out["out"]) + 0.5 * F.cross_entropy(out["aux"]), ignore_index=255
                (every 7th pixel).
  nll           Linear(16,32)-ReLU-Linear(32,10)-Softmax, torch.log of it through
                nn.NLLLoss(weight=linspace(0.5, 2, 10), ignore_index=3) (torch exports
                NegativeLogLikelihoodLoss: the exporter fuses only log_softmax into cross-entropy).
  multilabel    Linear(16,32)-ReLU-Linear(32,10) through nn.BCEWithLogitsLoss() against multi-hot
                float targets [n,10] (fed from an f32 .npy; torch exports the loss as Sigmoid, Log
                and a ReduceMean).

CHECK is one of:
  infer         BatchNorm's running statistics set to the data's (as in a trained model: the untrained
                ones shrink a deep network's output to ~0, which would match anything), then
                model.eval(), torch.onnx.export(model, x, f, opset_version=N) with torch's other
                defaults (constant folding on), `ofc`, then `ofrun --input` / `--output` under the
                ONNX file's own input and output names. Passes when
                max|of - torch| / max|torch| <= 1e-4 (float32 rounding of a different summation
                order stays well below that for models this small).
  train-sgd     The training recipe: model.train(), torch.onnx.export(..., training=TRAINING,
  train-adamw   do_constant_folding=False) and the list of parameters that require grad
                (scripts/of_export.py's mark_parameters, as the README exports), `ofc --train --loss cross_entropy --label label
                --optimizer sgd:lr=0.05` (resp. adamw:lr=1e-3,weight_decay=0.01), then
                `ofrun --data ... --steps 5 --no-shuffle --metrics --checkpoint` over a file of
                exactly 5 batches (npy:FEATURES,LABELS; the gpt a uint16 token file, as
                gpt_parallel.py feeds its LM). PyTorch trains a copy of the model made before the
                export (the export runs the model once in train mode, which moves BatchNorm's
                running statistics; the ONNX file gets the pre-export values written back) with
                torch.optim.SGD / AdamW and F.cross_entropy on the same batches in file order.
                Passes when
                (a) every step's loss agrees within 1e-4 relative: what train_vs_torch.py holds
                    `of` to over 20 steps, and 5 steps give Adam no time to amplify rounding; and
                (b) CK/latest's model.safetensors loads into a fresh copy of the model with
                    load_state_dict(strict=True) (every parameter and persistent buffer, in
                    PyTorch's names and shapes; a tied weight stored once gets its other name
                    added here) and every tensor is within 1e-3 of its own max |value| of
                    PyTorch's after 5 steps: BatchNorm running_mean/var included, integer and bool
                    tensors (num_batches_tracked, masks) exactly. Looser than the losses: a
                    weight's small entries are judged against its largest, and its rounding
                    differences accumulate over all 5 updates; and
                (c) `ofrun --eval --checkpoint CK` over the same file prints the loss and accuracy
                    of the trained PyTorch model in eval mode: the mean cross-entropy within 1e-4
                    and the percentage predicted within one label, over every label of every
                    sample (a sequence's tokens, an image's pixels).
                Ill-conditioned models (deep BatchNorm stacks over 4 samples: resnet18, the
                mobilenets, efficientnet) are judged by their distance from PyTorch in float64
                instead, within 2x that of the farthest of the referee runs (Model.float64_referee).

  dp2-sgd       As train-sgd / train-adamw, compiled with --devices 2:cpu --dp 2, against torch's
  dp2-adamw     DistributedDataParallel computed in one process: each half of a batch goes through
                the model alone (BatchNorm normalizes it with its own statistics), the gradient is
                the mean of the halves', and the running statistics are rank 0's (DDP broadcasts
                them from rank 0), which is what `of`'s checkpoint must hold.
  zero3-sgd     As dp2-sgd / dp2-adamw, with ofc --zero 3 (every weight, its gradient and its
  zero3-adamw   optimizer state split over the two devices, the weight gathered before use): the
                same reference, the same tolerances, the same strict checkpoint load.
  tp2-sgd       As train-sgd / train-adamw, compiled with --devices 2:cpu --tp 2 (weights split as
  tp2-adamw     SBP inference picks), against the same one-process PyTorch run: tensor parallelism
                changes no number beyond summation order.
  train-rmsprop As train-sgd with torchvision's MobileNetV3 recipe optimizer, torch.optim.RMSprop
  dp2-rmsprop   (alpha 0.9, eps 0.0316, momentum 0.9, weight_decay 1e-5; lr 1e-3), as
                `ofc --optimizer rmsprop:...` (and on 2 devices, as dp2-sgd).
  train-adagrad As train-sgd with torch.optim.Adagrad (lr 0.01, lr_decay 0.1, weight_decay 0.01),
  zero3-adagrad `ofc --optimizer adagrad:...` (and with --zero 3, as zero3-sgd).
  train-amsgrad As train-adamw with AdamW(amsgrad=True, betas=(0.9, 0.5)), `ofc --optimizer adamw:...,amsgrad=1`
  zero3-amsgrad (and with --zero 3).

Exit status: 0 pass (summary lines), 1 mismatch (both sides' numbers printed), 2 bad
arguments or a tool failure (the tool's error line printed; a failing torch.onnx.export counts
too, and a tool still running after 300 s counts as hung), 3 a missing prerequisite (torch,
onnx, numpy or, for the torchvision models, torchvision): a failure, since setup installs them
and a check that cannot run has not passed.

Run with Debian's /usr/bin/python3. The PyTorch side runs single-threaded with GOMP_SPINCOUNT=1000
(idle OpenMP threads would otherwise spin on the cores `ofrun` needs).
"""
import os

# Read by libgomp when torch loads it, so it must be set before `import torch`.
os.environ.setdefault("GOMP_SPINCOUNT", "1000")

import argparse  # noqa: E402
import copy  # noqa: E402
import fnmatch  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import re  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

# A missing prerequisite (scripts/setup.sh installs every one) fails the check: a check that
# cannot run has not passed. Exit status 3 tells it apart from a mismatch.
CANNOT_RUN = 3
HERE = os.path.dirname(os.path.abspath(__file__))

BATCH = 4
STEPS = 5
INFER_REL_TOL = 1e-4
MIN_OUTPUT_SCALE = 1e-3  # an output of about zero matches anything within a relative tolerance
LOSS_REL_TOL = 1e-4
WEIGHT_REL_TOL = 1e-3
# Adam divides by sqrt(v): a gradient of pure rounding noise (a parameter the loss does not depend
# on, up to rounding) still moves by about lr per step on both sides, in unrelated directions (so
# does Adagrad, by sqrt of the sum of squares): 2 * lr * STEPS, at AdamW's lr of 1e-3 (times the
# check's lr over that for other optimizers).
ADAM_NOISE_ABS_TOL = 2 * 1e-3 * 5
REFEREE_FACTOR = 2.0
# An ill-conditioned model's float32 noise is sampled by this many PyTorch runs besides the plain
# one, each from weights and inputs moved by about one rounding (relative 2**-24) ...
NOISE_RUNS = 3
# ... and by float64 runs in which one activation input that float32 puts on an uncertain side of
# a kink (ReLU's 0, ReLU6's 0 and 6) lies on its other side in the first step: at most this many,
# the nearest to their kink.
KINK_RUNS = 4
# torch.nn classes by name (torch loads later): where the gradient jumps.
KINKS = {"ReLU": (0.0,), "ReLU6": (0.0, 6.0), "Hardswish": (-3.0, 3.0), "Hardsigmoid": (-3.0, 3.0)}
WEIGHT_FLOOR = 1e-6
TOOL_TIMEOUT_S = 300  # a plan that stalls would otherwise hang the test forever
def optimizers(lr_scale, weight_decay=0.01):
    """CHECK -> (ofc --optimizer, torch.optim factory, learning rate), learning rates times the
    model's scale."""
    sgd, adamw = 0.05 * lr_scale, 1e-3 * lr_scale
    return {
        "train-sgd": (f"sgd:lr={sgd!r}", lambda params: torch.optim.SGD(params, lr=sgd), sgd),
        "train-adamw": (f"adamw:lr={adamw!r},weight_decay={weight_decay!r}",
                        lambda params: torch.optim.AdamW(params, lr=adamw, weight_decay=weight_decay), adamw),
        "train-rmsprop": (f"rmsprop:lr={adamw!r},alpha=0.9,eps=0.0316,momentum=0.9,weight_decay=1e-05",
                          lambda params: torch.optim.RMSprop(params, lr=adamw, alpha=0.9, eps=0.0316, momentum=0.9,
                                                             weight_decay=1e-5), adamw),
        # beta2 0.5: v falls below its largest within 5 steps (at 0.999 it only grows), so amsgrad shows.
        "train-amsgrad": (f"adamw:lr={adamw!r},beta2=0.5,weight_decay={weight_decay!r},amsgrad=1",
                          lambda params: torch.optim.AdamW(params, lr=adamw, betas=(0.9, 0.5), weight_decay=weight_decay,
                                                           amsgrad=True), adamw),
        "train-adagrad": (f"adagrad:lr={10 * adamw!r},lr_decay=0.1,weight_decay=0.01",
                          lambda params: torch.optim.Adagrad(params, lr=10 * adamw, lr_decay=0.1, weight_decay=0.01),
                          10 * adamw),
    }
CHECKS = ["infer", "train-sgd", "train-adamw", "dp2-sgd", "dp2-adamw", "zero3-sgd", "zero3-adamw", "train-rmsprop",
          "dp2-rmsprop", "train-adagrad", "zero3-adagrad", "train-amsgrad", "zero3-amsgrad", "tp2-sgd", "tp2-adamw"]
DP = 2  # devices of the dp2-* and zero3-* checks

MODEL_NAMES = ["linear3d", "mlp_nobias", "resnet18", "mobilenet_v2", "gpt", "encoder", "mobilenet_v3_small",
               "mobilenet_v3_large", "efficientnet_b0", "vit", "convnext", "decoder", "mha", "gelu_tanh", "lstm", "gru",
               "lstm_bi", "gru_bi", "bn_cnn", "layer_norms", "resnet50", "gpt_tied", "encoder_seq_first",
               "decoder_batch_first", "nanogpt", "densenet", "pads", "swin", "pointwise", "conv1d", "unet", "upsample", "norms", "maxpool_time",
               "extremum", "normalize", "prelu", "einsum", "rearrange", "masks", "argmax", "segment", "shufflenet",
               "weighted_ce", "summed_ce", "deeplab_aux", "multilabel", "nll", "pos_encoding", "finetune",
               "padded_lm", "bn_cumulative", "gpt_llrd", "llama", "bn_batch_stats", "stop_gradient", "quant_aware", "vq_vae", "mixup", "focal", "moe", "actor_critic", "weight_norm", "l1_norms", "rnn", "nan_to_num", "bucketize", "scatter", "video", "unet3d", "exported_losses", "exported_layers", "linear_attention", "recommender", "gem", "metric_learning", "lrn", "exported_math"]


def parse_args():
    """Needs neither torch nor the tools: --list and bad arguments answer without them."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--list", action="store_true", help="print the model names and exit")
    p.add_argument("--bin", help="folder holding ofc and ofrun")
    p.add_argument("--work", help="scratch folder (WORK/MODEL-CHECK is emptied first)")
    p.add_argument("--opset", type=int, default=17,
                   help="ONNX opset to export (default 17: the first with LayerNormalization)")
    p.add_argument("model", nargs="?", choices=MODEL_NAMES)
    p.add_argument("check", nargs="?", choices=CHECKS)
    args = p.parse_args()
    if args.list:
        print("\n".join(MODEL_NAMES))
        sys.exit(0)
    if not (args.bin and args.work and args.model and args.check):
        p.error("needs --bin DIR --work DIR MODEL CHECK (or --list)")  # exits 2
    return args


if __name__ == "__main__":  # before the imports below, so that --list and bad arguments need none of them
    ARGS = parse_args()

try:
    import numpy as np
    import onnx
    from onnx import numpy_helper
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    sys.path.insert(0, HERE)
    sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))
    from torch_load_checkpoint import read_safetensors
    from of_export import export_for_inference, export_keeping_gradient_stops, mark_parameters, padding_rows
except ImportError as e:  # the models below are torch modules: nothing more can be defined
    print(f"zoo: FAIL: cannot run: {sys.executable} cannot import what the checks need: {e} "
          "(scripts/setup.sh installs it)")
    sys.exit(CANNOT_RUN)


class Failure(Exception):
    """A tool failed or printed something unexpected (exit 2)."""


class CannotRun(Exception):
    """A prerequisite is missing (exit 3: a failure, setup installs every one)."""


# ---------------------------------------------------------------- the models

class Model:
    """infer: the module `infer` exports; train: the module the training checks export (the same
    one, or a wrapper sharing its parameters); feature / label: one sample's shape (labels are
    class ids below `classes`); tokens: fed as a token file (features are the labels shifted)."""

    def __init__(self, infer, feature, classes, label=(), train=None, tokens=False, zero_grad=None, lr_scale=1.0,
                 float64_referee=False, label_smoothing=0.0, ignore_index=None, own_loss=False, multi_hot=False,
                 summed=False, no_decay_1d=False, weight_decay=0.01, clip_norm=0.0, schedule=None, param_lr=(),
                 clip_value=0.0, mixup=False, missing_values=False, written_out=False):
        self.infer, self.train = infer, train if train is not None else infer
        self.feature, self.label, self.classes, self.tokens = tuple(feature), tuple(label), classes, tokens
        # {state_dict key: slice} of elements whose gradient is zero in exact arithmetic (see
        # ADAM_NOISE_ABS_TOL); compared with that absolute tolerance under Adam.
        self.zero_grad = zero_grad or {}
        # BatchNorm over 4 samples on random labels diverges at the default rates (the loss
        # triples within two steps), and a diverging run amplifies rounding by ~500x a step: such
        # models train with smaller rates, where both sides stay comparable.
        self.lr_scale = lr_scale
        # Deep BatchNorm stacks over a few samples are ill-conditioned: PyTorch's own float32
        # gradients of mobilenet_v2 here are 2-3% away from float64 (ours 0.5-1%). Such a model
        # is judged against PyTorch in float64: `of` must be at most REFEREE_FACTOR times as far
        # from it as the farthest referee run is (or within the plain tolerances): PyTorch in
        # float32, jiggled float32 copies, and float64 runs with one uncertain kink flipped
        # (referee_runs). mobilenet_v2 needs the last: at batch 4 one ReLU6 input of features.18
        # lies 1.4e-5 above 0 in float64, float32 PyTorch's value of it varies by -14e-6..+28e-6
        # with its input's last bit, and `of`'s is below 0: its step-1 weights are float64
        # PyTorch's with that one element's gradient cut, within 2e-5.
        self.float64_referee = float64_referee
        # Trained with F.cross_entropy(..., label_smoothing=E) and ofc --loss cross_entropy:label_smoothing=E.
        self.label_smoothing = label_smoothing
        # Every 7th label is this one, which F.cross_entropy(..., ignore_index=K) and ofc --loss
        # cross_entropy:ignore_index=K leave out (a segmentation dataset's void pixels).
        self.ignore_index = ignore_index
        # `train` returns its own loss: forward(input, label) -> scalar, exported with both inputs
        # and trained with ofc --loss output (no infer check).
        self.own_loss = own_loss
        # Labels are float targets [n, *label], 1 with probability 0.3 and else 0 (a multi-label
        # classifier's), not class ids.
        self.multi_hot = multi_hot
        # torch's default export refuses a layer of the model: its inference check exports with
        # scripts/of_export.py's export_for_inference, as the README says.
        self.written_out = written_out
        # Labels are class probabilities [n, classes], as torchvision's RandomMixup makes them:
        # lam * one_hot(a) + (1 - lam) * one_hot(b), lam ~ Beta(0.2, 0.2).
        self.mixup = mixup
        # The loss is a sum over the batch: on `parts` devices `of` trains the whole batch's sum,
        # the sum of the ranks' sums (DDP would average them: README), which dp checks compare.
        self.summed = summed
        # Trained as nanoGPT trains: no weight decay on tensors of fewer than 2 dimensions (a torch
        # param group with weight_decay 0; ofc --no-weight-decay-1d).
        self.no_decay_1d = no_decay_1d
        # AdamW's weight_decay (a large one makes the decay of 5 steps show beyond the tolerances).
        self.weight_decay = weight_decay
        # Each step's gradients clipped to this global norm: torch.nn.utils.clip_grad_norm_ before
        # step(), ofc --clip-grad-norm.
        self.clip_norm = clip_norm
        # ... or each gradient element clamped to [-v, v]: clip_grad_value_, ofc --clip-grad-value.
        self.clip_value = clip_value
        # The recipe's learning-rate schedule: base lr -> (ofc --schedule, factory of the torch
        # scheduler the recipe steps after each optimizer step), over the STEPS steps of the run.
        self.schedule = schedule
        # Param groups with their own lr: [(glob of parameter names, multiple of the check's lr)],
        # the first match winning (ofc --param-lr GLOB=LR; torch param groups with "lr").
        self.param_lr = list(param_lr)
        # Features with missing and infinite values (a tabular dataset's): every 7th NaN, every
        # 11th +inf, every 13th -inf, which the model cleans up itself.
        self.missing_values = missing_values


class Flatten(nn.Module):
    """[batch, seq, classes] -> [batch*seq, classes]: cross_entropy wants one row per label."""

    def __init__(self, net, classes):
        super().__init__()
        self.net, self.classes = net, classes

    def forward(self, x):
        return self.net(x).reshape(-1, self.classes)


def linear3d():
    net = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 8))
    return Model(net, (5, 16), 8, label=(5,), train=Flatten(net, 8))


def mlp_nobias():
    return Model(nn.Sequential(nn.Linear(16, 32, bias=False), nn.ReLU(), nn.Linear(32, 10)), (16,), 10)


def resnet18():
    import torchvision
    # 64 px: layer4's BatchNorm then sees 2x2 positions of 4 samples, not a single one.
    return Model(torchvision.models.resnet18(num_classes=10), (3, 64, 64), 10, lr_scale=0.1, float64_referee=True)


def resnet50():
    from torchvision.models.resnet import ResNet, Bottleneck
    # resnet50's code (Bottleneck blocks, 4x expansion to 2048 channels) with one block per stage
    # instead of (3, 4, 6, 3): the same operators, a fifth of the time.
    return Model(ResNet(Bottleneck, [1, 1, 1, 1], num_classes=10), (3, 64, 64), 10, lr_scale=0.1, float64_referee=True)


def mobilenet_v2():
    import torchvision
    return Model(torchvision.models.mobilenet_v2(num_classes=10, width_mult=0.25, dropout=0.0), (3, 64, 64), 10,
                 lr_scale=0.1, float64_referee=True)


GPT_VOCAB, GPT_WIDTH, GPT_HEADS, GPT_SEQ, GPT_LAYERS = 64, 32, 4, 16, 2


class CausalSelfAttention(nn.Module):
    def __init__(self, float_mask=False):
        super().__init__()
        self.c_attn = nn.Linear(GPT_WIDTH, 3 * GPT_WIDTH)
        self.c_proj = nn.Linear(GPT_WIDTH, GPT_WIDTH)
        self.attn_dropout, self.resid_dropout = nn.Dropout(0.0), nn.Dropout(0.0)
        self.float_mask = float_mask
        if float_mask:  # nanoGPT's own: a float tril buffer "bias", compared with 0 in forward
            self.register_buffer("bias", torch.tril(torch.ones(GPT_SEQ, GPT_SEQ)).view(1, 1, GPT_SEQ, GPT_SEQ))
        else:
            # A persistent bool buffer, as users register it: it is in the state_dict, so a strict
            # load of `of`'s checkpoint needs it there too.
            self.register_buffer("mask", torch.triu(torch.ones(GPT_SEQ, GPT_SEQ, dtype=torch.bool), 1))

    def forward(self, x):
        b, t, c = x.size()
        q, k, v = self.c_attn(x).split(GPT_WIDTH, dim=2)
        q = q.view(b, t, GPT_HEADS, c // GPT_HEADS).transpose(1, 2)
        k = k.view(b, t, GPT_HEADS, c // GPT_HEADS).transpose(1, 2)
        v = v.view(b, t, GPT_HEADS, c // GPT_HEADS).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        if self.float_mask:
            att = att.masked_fill(self.bias[:, :, :t, :t] == 0, float("-inf"))
        else:
            att = att.masked_fill(self.mask[:t, :t], float("-inf"))
        att = self.attn_dropout(F.softmax(att, dim=-1))
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, c)
        return self.resid_dropout(self.c_proj(y))


class GptBlock(nn.Module):
    def __init__(self, float_mask=False):
        super().__init__()
        self.ln_1, self.ln_2 = nn.LayerNorm(GPT_WIDTH), nn.LayerNorm(GPT_WIDTH)
        self.attn = CausalSelfAttention(float_mask)
        self.mlp = nn.Sequential(nn.Linear(GPT_WIDTH, 4 * GPT_WIDTH), nn.GELU(),
                                 nn.Linear(4 * GPT_WIDTH, GPT_WIDTH), nn.Dropout(0.0))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, float_mask=False):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(GPT_VOCAB, GPT_WIDTH), nn.Embedding(GPT_SEQ, GPT_WIDTH)
        self.drop = nn.Dropout(0.0)
        self.blocks = nn.ModuleList(GptBlock(float_mask) for _ in range(GPT_LAYERS))
        self.ln_f = nn.LayerNorm(GPT_WIDTH)
        self.head = nn.Linear(GPT_WIDTH, GPT_VOCAB, bias=False)

    def forward(self, idx):
        b, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long)
        x = self.drop(self.wte(idx) + self.wpe(pos))
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x)).reshape(b * t, GPT_VOCAB)


def gpt():
    return Model(GPT(), (GPT_SEQ,), GPT_VOCAB, label=(GPT_SEQ,), tokens=True, zero_grad=GPT_KEY_BIAS)


def gpt_llrd():
    # BERT-style fine-tuning: layer-wise learning-rate decay (0.8 a layer down from the head) with
    # transformers' linear schedule and warm-up.
    return Model(GPT(), (GPT_SEQ,), GPT_VOCAB, label=(GPT_SEQ,), tokens=True, zero_grad=GPT_KEY_BIAS,
                 param_lr=[("blocks.1.*", 0.8), ("blocks.0.*", 0.64), ("wte.*", 0.512), ("wpe.*", 0.512)],
                 schedule=lambda lr: ("linear:warmup=2", lambda opt: torch.optim.lr_scheduler.LambdaLR(
                     opt, lambda t: t / 2 if t < 2 else max(0.0, (STEPS - t) / (STEPS - 2)))))


def nanogpt():
    return Model(GPT(float_mask=True), (GPT_SEQ,), GPT_VOCAB, label=(GPT_SEQ,), tokens=True, zero_grad=GPT_KEY_BIAS,
                 no_decay_1d=True, weight_decay=1.0, schedule=nanogpt_schedule)


def nanogpt_schedule(lr, warmup=2, min_ratio=0.1):
    """nanoGPT's get_lr(it): (it+1)/(warmup+1) of lr while it < warmup, then a cosine from lr to
    min_lr = lr/10 at lr_decay_iters (here the run's STEPS), as a LambdaLR of the 0-based step."""
    min_lr = lr * min_ratio

    def factor(it):
        if it < warmup:
            return (it + 1) / (warmup + 1)
        ratio = (it - warmup) / (STEPS - warmup)
        return (min_lr + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (lr - min_lr)) / lr
    return (f"cosine:warmup={warmup},start={1 / (warmup + 1)!r},min_lr={min_lr!r}",
            lambda opt: torch.optim.lr_scheduler.LambdaLR(opt, factor))


class PositionalEncoding(nn.Module):
    """PyTorch's own "Language Modeling with nn.Transformer" tutorial's: a sinusoid table
    registered as a buffer (float, added to the embeddings: it must not train)."""

    def __init__(self, d_model, max_len=64):
        super().__init__()
        position = torch.arange(max_len).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, 1, d_model)
        pe[:, 0, 0::2] = torch.sin(position * div_term)
        pe[:, 0, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe)

    def forward(self, x):
        return x + self.pe[:x.size(0)]


class TutorialLM(nn.Module):
    """The tutorial's TransformerModel (sequence-first), with its causal mask a float buffer of
    -inf above the diagonal (added to the attention scores); fed batch-first tokens, it returns a
    row of logits per token."""

    def __init__(self, ntoken=GPT_VOCAB, d_model=GPT_WIDTH, nhead=2, d_hid=64, nlayers=2):
        super().__init__()
        self.pos_encoder = PositionalEncoding(d_model)
        layer = nn.TransformerEncoderLayer(d_model, nhead, d_hid, dropout=0.0)
        self.transformer_encoder = nn.TransformerEncoder(layer, nlayers)
        self.embedding = nn.Embedding(ntoken, d_model)
        self.d_model, self.ntoken = d_model, ntoken
        self.linear = nn.Linear(d_model, ntoken)
        self.register_buffer("src_mask", torch.triu(torch.full((GPT_SEQ, GPT_SEQ), float("-inf")), diagonal=1))

    def forward(self, tokens):
        src = self.embedding(tokens.t()) * math.sqrt(self.d_model)
        out = self.linear(self.transformer_encoder(self.pos_encoder(src), self.src_mask))
        return out.transpose(0, 1).reshape(-1, self.ntoken)


def pos_encoding():
    # The tutorial's StepLR(optimizer, 1.0, gamma=0.95) steps once an epoch; over the 5 steps here
    # it steps every 2 optimizer steps by 0.5, so that it shows.
    return Model(TutorialLM(), (GPT_SEQ,), GPT_VOCAB, label=(GPT_SEQ,), tokens=True, clip_norm=0.5,
                 schedule=lambda lr: ("step:size=2,gamma=0.5", lambda opt: torch.optim.lr_scheduler.StepLR(opt, 2, gamma=0.5)),
                 zero_grad=key_bias(f"transformer_encoder.layers.{i}.self_attn.in_proj_bias" for i in range(2)))


def finetune():
    """torchvision's fine-tuning recipe: a resnet18 with every parameter frozen (requires_grad =
    False) and a new head; its BatchNorms, in train mode, still update their running statistics."""
    import torchvision
    net = torchvision.models.resnet18(num_classes=1000)
    for p in net.parameters():
        p.requires_grad = False
    net.fc = nn.Linear(net.fc.in_features, 10)
    return Model(net, (3, 64, 64), 10)


class PaddedLM(nn.Module):
    """A text model as NLP code writes it: nn.Embedding(padding_idx=0) (row 0 starts at zero and
    torch's gradient never touches it; the exporter drops padding_idx with a warning), a GRU, a
    head per token."""

    def __init__(self, vocab=8, width=16):
        super().__init__()
        self.embedding = nn.Embedding(vocab, width, padding_idx=0)
        self.rnn = nn.GRU(width, width, batch_first=True)
        self.head = nn.Linear(width, vocab)

    def forward(self, tokens):
        h, _ = self.rnn(self.embedding(tokens))
        return self.head(h).reshape(-1, self.head.out_features)


def padded_lm():
    return Model(PaddedLM(), (GPT_SEQ,), 8, label=(GPT_SEQ,), tokens=True)


# A LLaMA-style decoder as Karpathy's llama2.c model.py writes it: RMSNorm, rotary embeddings from
# cos/sin tables registered as non-persistent buffers, grouped-query attention (repeat_kv), a
# float -inf causal mask buffer, SwiGLU feed-forward, the output head tied to the embeddings.
LLAMA_DIM, LLAMA_HEADS, LLAMA_KV_HEADS, LLAMA_LAYERS, LLAMA_MULTIPLE_OF = 32, 4, 2, 2, 32


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def _norm(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)

    def forward(self, x):
        return self._norm(x.float()).type_as(x) * self.weight


def precompute_freqs_cis(dim, end, theta=10000.0):
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: (dim // 2)].float() / dim))
    t = torch.arange(end, device=freqs.device)
    freqs = torch.outer(t, freqs).float()
    return torch.cos(freqs), torch.sin(freqs)


def reshape_for_broadcast(freqs_cis, x):
    ndim = x.ndim
    shape = [d if i == 1 or i == ndim - 1 else 1 for i, d in enumerate(x.shape)]
    return freqs_cis.view(shape)


def apply_rotary_emb(xq, xk, freqs_cos, freqs_sin):
    xq_r, xq_i = xq.float().reshape(xq.shape[:-1] + (-1, 2)).unbind(-1)
    xk_r, xk_i = xk.float().reshape(xk.shape[:-1] + (-1, 2)).unbind(-1)
    freqs_cos = reshape_for_broadcast(freqs_cos, xq_r)
    freqs_sin = reshape_for_broadcast(freqs_sin, xq_r)
    xq_out_r = xq_r * freqs_cos - xq_i * freqs_sin
    xq_out_i = xq_r * freqs_sin + xq_i * freqs_cos
    xk_out_r = xk_r * freqs_cos - xk_i * freqs_sin
    xk_out_i = xk_r * freqs_sin + xk_i * freqs_cos
    xq_out = torch.stack([xq_out_r, xq_out_i], dim=-1).flatten(3)
    xk_out = torch.stack([xk_out_r, xk_out_i], dim=-1).flatten(3)
    return xq_out.type_as(xq), xk_out.type_as(xk)


def repeat_kv(x, n_rep):
    bs, slen, n_kv_heads, head_dim = x.shape
    if n_rep == 1:
        return x
    return (x[:, :, :, None, :].expand(bs, slen, n_kv_heads, n_rep, head_dim)
            .reshape(bs, slen, n_kv_heads * n_rep, head_dim))


class LlamaAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.n_rep = LLAMA_HEADS // LLAMA_KV_HEADS
        self.head_dim = LLAMA_DIM // LLAMA_HEADS
        self.wq = nn.Linear(LLAMA_DIM, LLAMA_HEADS * self.head_dim, bias=False)
        self.wk = nn.Linear(LLAMA_DIM, LLAMA_KV_HEADS * self.head_dim, bias=False)
        self.wv = nn.Linear(LLAMA_DIM, LLAMA_KV_HEADS * self.head_dim, bias=False)
        self.wo = nn.Linear(LLAMA_HEADS * self.head_dim, LLAMA_DIM, bias=False)
        self.attn_dropout, self.resid_dropout = nn.Dropout(0.0), nn.Dropout(0.0)
        mask = torch.full((1, 1, GPT_SEQ, GPT_SEQ), float("-inf"))
        self.register_buffer("mask", torch.triu(mask, diagonal=1))

    def forward(self, x, freqs_cos, freqs_sin):
        bsz, seqlen, _ = x.shape
        xq, xk, xv = self.wq(x), self.wk(x), self.wv(x)
        xq = xq.view(bsz, seqlen, LLAMA_HEADS, self.head_dim)
        xk = xk.view(bsz, seqlen, LLAMA_KV_HEADS, self.head_dim)
        xv = xv.view(bsz, seqlen, LLAMA_KV_HEADS, self.head_dim)
        xq, xk = apply_rotary_emb(xq, xk, freqs_cos, freqs_sin)
        xk, xv = repeat_kv(xk, self.n_rep), repeat_kv(xv, self.n_rep)
        xq, xk, xv = xq.transpose(1, 2), xk.transpose(1, 2), xv.transpose(1, 2)
        scores = torch.matmul(xq, xk.transpose(2, 3)) / math.sqrt(self.head_dim)
        scores = scores + self.mask[:, :, :seqlen, :seqlen]
        scores = self.attn_dropout(F.softmax(scores.float(), dim=-1).type_as(xq))
        output = torch.matmul(scores, xv).transpose(1, 2).contiguous().view(bsz, seqlen, -1)
        return self.resid_dropout(self.wo(output))


class LlamaFeedForward(nn.Module):
    def __init__(self):
        super().__init__()
        hidden = int(2 * (4 * LLAMA_DIM) / 3)
        hidden = LLAMA_MULTIPLE_OF * ((hidden + LLAMA_MULTIPLE_OF - 1) // LLAMA_MULTIPLE_OF)
        self.w1 = nn.Linear(LLAMA_DIM, hidden, bias=False)
        self.w2 = nn.Linear(hidden, LLAMA_DIM, bias=False)
        self.w3 = nn.Linear(LLAMA_DIM, hidden, bias=False)
        self.dropout = nn.Dropout(0.0)

    def forward(self, x):
        return self.dropout(self.w2(F.silu(self.w1(x)) * self.w3(x)))


class LlamaBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.attention, self.feed_forward = LlamaAttention(), LlamaFeedForward()
        self.attention_norm, self.ffn_norm = RMSNorm(LLAMA_DIM), RMSNorm(LLAMA_DIM)

    def forward(self, x, freqs_cos, freqs_sin):
        h = x + self.attention.forward(self.attention_norm(x), freqs_cos, freqs_sin)
        return h + self.feed_forward.forward(self.ffn_norm(h))


class Llama(nn.Module):
    """llama2.c's Transformer, its forward with targets (the logits of every position)."""

    def __init__(self):
        super().__init__()
        self.tok_embeddings = nn.Embedding(GPT_VOCAB, LLAMA_DIM)
        self.dropout = nn.Dropout(0.0)
        self.layers = nn.ModuleList(LlamaBlock() for _ in range(LLAMA_LAYERS))
        self.norm = RMSNorm(LLAMA_DIM)
        self.output = nn.Linear(LLAMA_DIM, GPT_VOCAB, bias=False)
        self.tok_embeddings.weight = self.output.weight
        freqs_cos, freqs_sin = precompute_freqs_cis(LLAMA_DIM // LLAMA_HEADS, GPT_SEQ)
        self.register_buffer("freqs_cos", freqs_cos, persistent=False)
        self.register_buffer("freqs_sin", freqs_sin, persistent=False)
        self.apply(self._init_weights)
        for pn, p in self.named_parameters():
            if pn.endswith("w3.weight") or pn.endswith("wo.weight"):
                torch.nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * LLAMA_LAYERS))

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                torch.nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, tokens):
        _bsz, seqlen = tokens.shape
        h = self.dropout(self.tok_embeddings(tokens))
        freqs_cos, freqs_sin = self.freqs_cos[:seqlen], self.freqs_sin[:seqlen]
        for layer in self.layers:
            h = layer(h, freqs_cos, freqs_sin)
        return self.output(self.norm(h))


def llama():
    net = Llama()
    return Model(net, (GPT_SEQ,), GPT_VOCAB, label=(GPT_SEQ,), tokens=True, train=Flatten(net, GPT_VOCAB))


def gpt_tied():
    net = GPT()
    net.head.weight = net.wte.weight  # nanoGPT's weight tying: one tensor, two state_dict names
    return Model(net, (GPT_SEQ,), GPT_VOCAB, label=(GPT_SEQ,), tokens=True, zero_grad=GPT_KEY_BIAS)


class Encoder(nn.Module):
    def __init__(self, batch_first=True):
        super().__init__()
        layer = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=batch_first)
        self.encoder = nn.TransformerEncoder(layer, 2)
        self.fc = nn.Linear(32, 10)
        self.batch_first = batch_first

    def forward(self, x):  # x [batch, seq, 32] either way
        if self.batch_first:
            return self.fc(self.encoder(x).mean(dim=1))
        return self.fc(self.encoder(x.transpose(0, 1)).mean(dim=0))


def key_bias(names, width=32):
    """Softmax is invariant to adding a constant to every score, so an attention's key bias (the
    middle third of in_proj_bias) has zero gradient: only rounding noise, which Adam scales to
    lr-sized steps (see ADAM_NOISE_ABS_TOL)."""
    return {name: slice(width, 2 * width) for name in names}


GPT_KEY_BIAS = key_bias((f"blocks.{i}.attn.c_attn.bias" for i in range(GPT_LAYERS)), GPT_WIDTH)


def encoder(batch_first=True):
    return Model(Encoder(batch_first), (8, 32), 10,
                 zero_grad=key_bias(f"encoder.layers.{i}.self_attn.in_proj_bias" for i in range(2)))


def encoder_seq_first():
    return encoder(batch_first=False)


def mobilenet_v3_small():
    import torchvision
    return Model(torchvision.models.mobilenet_v3_small(num_classes=10, width_mult=0.25, dropout=0.0), (3, 64, 64), 10,
                 lr_scale=0.1, float64_referee=True)


def mobilenet_v3_large():
    import torchvision
    return Model(torchvision.models.mobilenet_v3_large(num_classes=10, width_mult=0.25, dropout=0.0), (3, 64, 64), 10,
                 lr_scale=0.1, float64_referee=True)


class Segmenter(nn.Module):
    """torchvision's segmentation models return {"out": logits [N,C,H,W]}: a training loop takes "out"."""

    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x):
        return self.net(x)["out"]


def segment():
    import torchvision
    from torchvision.models.segmentation.lraspp import _lraspp_mobilenetv3
    # lraspp_mobilenet_v3_large(num_classes=4) as torchvision builds it, on a 0.25-wide backbone.
    backbone = torchvision.models.mobilenet_v3_large(width_mult=0.25, dilated=True)
    return Model(Segmenter(_lraspp_mobilenetv3(backbone, 4)), (3, 64, 64), 4, label=(64, 64), lr_scale=0.1,
                 float64_referee=True, ignore_index=255)


class WithLoss(nn.Module):
    """A model that returns its own loss, as training code built around a criterion often is:
    forward(input, label) -> criterion(net(input), label)."""

    def __init__(self, net, criterion):
        super().__init__()
        self.net, self.criterion = net, criterion

    def forward(self, input, label):
        return self.criterion(self.net(input), label)


class SegmentationLoss(nn.Module):
    """torchvision's segmentation recipe (references/segmentation/train.py, criterion): the main
    head's cross-entropy plus half the auxiliary head's, void pixels (255) ignored."""

    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, input, label):
        out = self.net(input)
        return F.cross_entropy(out["out"], label, ignore_index=255) + 0.5 * F.cross_entropy(out["aux"], label, ignore_index=255)


def weighted_ce():
    net = bn_cnn().infer
    return Model(net, (3, 8, 8), 10, own_loss=True,
                 train=WithLoss(net, nn.CrossEntropyLoss(weight=torch.linspace(0.5, 2.0, 10))))


def summed_ce():
    net = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 10))
    return Model(net, (16,), 10, own_loss=True, lr_scale=0.05, summed=True,
                 train=WithLoss(net, nn.CrossEntropyLoss(reduction="sum", ignore_index=3)))


class LogOf(nn.Module):
    """torch.log of a model's probabilities (a model ending in Softmax, as Keras-style code writes it)."""

    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x):
        return torch.log(self.net(x))


def nll():
    net = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 10), nn.Softmax(dim=1))
    return Model(net, (16,), 10, own_loss=True,
                 train=WithLoss(LogOf(net), nn.NLLLoss(weight=torch.linspace(0.5, 2.0, 10), ignore_index=3)))


def multilabel():
    net = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 10))
    return Model(net, (16,), 10, label=(10,), own_loss=True, multi_hot=True, train=WithLoss(net, nn.BCEWithLogitsLoss()))


def mixup():
    # torchvision's classification recipe with --mixup-alpha: the criterion (with class weights
    # here) takes the mixed batch's class probabilities as its target.
    net = bn_cnn().infer
    return Model(net, (3, 8, 8), 10, label=(10,), own_loss=True, mixup=True,
                 train=WithLoss(net, nn.CrossEntropyLoss(weight=torch.linspace(0.5, 2.0, 10))))


class LinearAttention(nn.Module):
    """Causal linear attention, the scores (q k^T) masked by .tril() instead of a softmax (as
    linear-attention and RetNet-style code writes it), then a PACT activation: torch.clamp between
    bounds computed from a learned 0-d parameter, as quantization-aware training clips."""

    def __init__(self):
        super().__init__()
        self.embed, self.qkv, self.out = nn.Linear(8, 16), nn.Linear(16, 48), nn.Linear(16, 10)
        self.alpha = nn.Parameter(torch.tensor(0.8))

    def forward(self, x):  # x [N, 6, 8]
        h = self.embed(x)
        q, k, v = self.qkv(h).chunk(3, -1)
        h = h + (q @ k.transpose(1, 2)).tril() @ v / 4
        return self.out(torch.clamp(h, min=self.alpha - 1.0, max=self.alpha).mean(1))


def linear_attention():
    return Model(LinearAttention(), (6, 8), 10)


class Recommender(nn.Module):
    """A DLRM-style recommender's sparse features through nn.EmbeddingBag (torch exports it as a
    Loop; scripts/of_export.py writes it out): a genre field of 3 ids hashed into 12 buckets
    (`ids % 12`, Mod of int64) summed with per-sample weights, a history of 5 ids averaged with padding_idx 0 (no entry), a max over 2 tag ids, and
    clicks in bags of uneven lengths (a 1-D input with offsets) averaged; ids made from the float
    features, beside an MLP of the dense ones."""

    def __init__(self):
        super().__init__()
        self.bottom = nn.Sequential(nn.Linear(4, 8), nn.ReLU())
        self.genres = nn.EmbeddingBag(12, 8, mode="sum")
        self.history = nn.EmbeddingBag(20, 8, mode="mean", padding_idx=0)
        self.tags = nn.EmbeddingBag(9, 8, mode="max")
        self.clicks = nn.EmbeddingBag(15, 8, mode="mean")
        self.top = nn.Linear(40, 10)

    def forward(self, x):  # x [N, 14]: 4 dense features, then 10 id-like ones
        p = torch.sigmoid(x[:, 4:])
        def ids(cols, n, shift=0):  # ids in [0, n); with a shift, 0 (history's padding) more often
            return (p[:, cols] * n - shift).long().clamp(0, n - 1)
        genres = self.genres((p[:, 0:3] * 1000).long() % 12, per_sample_weights=p[:, 0:3])  # hashed: ids % buckets
        history = self.history(ids(slice(3, 8), 20, shift=4))
        tags = self.tags(ids(slice(8, 10), 9))
        n = x.shape[0]
        starts = torch.tensor([0] + [3 * i + i % 2 for i in range(1, n)])  # bags of 4, 2, 4, ... ids
        clicks = self.clicks(ids(slice(0, 3), 15).flatten(), starts)
        dense = self.bottom(x[:, :4])
        dense = dense + torch.fmod(dense * 3, 1.0)  # a sawtooth of it (torch.fmod of floats)
        return self.top(torch.cat([dense, genres, history, tags, clicks], 1))


def recommender():
    return Model(Recommender(), (14,), 10, written_out=True)


class GeM(nn.Module):
    """Generalized-mean pooling with a learned exponent p, as image-retrieval models pool (cirtorch's
    and timm's GeM): (mean over the map of x.clamp(min=eps) ** p) ** (1 / p)."""

    def __init__(self, p=3.0, eps=1e-6):
        super().__init__()
        self.p, self.eps = nn.Parameter(torch.ones(1) * p), eps

    def forward(self, x):
        return F.avg_pool2d(x.clamp(min=self.eps).pow(self.p), (x.size(-2), x.size(-1))).pow(1.0 / self.p)


def gem():
    net = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 16, 3, stride=2, padding=1), nn.ReLU(),
                        GeM(), nn.Flatten(), nn.Linear(16, 10))
    # p's gradient is small beside its value 3: a rate 20x the others' moves it enough for the
    # weight check to see it (param groups, as retrieval recipes give p its own).
    return Model(net, (3, 8, 8), 10, param_lr=[("4.p", 20.0)])


class ExportedLosses(nn.Module):
    """A model whose forward adds up the torch.nn.functional losses torch 1.13 cannot export
    (scripts/of_export.py writes them out), against a multi-hot target y and its signs 2y - 1."""

    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, input, label):
        out, sign = self.net(input), 2 * label - 1
        return (F.mse_loss(out, label) + F.l1_loss(out, label) + F.smooth_l1_loss(out, label, beta=0.5)
                + F.huber_loss(out, label, delta=0.7) + F.binary_cross_entropy(torch.sigmoid(out), label)
                + F.soft_margin_loss(out, sign) + F.margin_ranking_loss(out[:, 0], out[:, 1], sign[:, 2], margin=0.1)
                + F.hinge_embedding_loss(out, sign, margin=0.5)
                + F.cosine_embedding_loss(out[:, :5], out[:, 5:], sign[:, 0], margin=0.2) + F.poisson_nll_loss(out, label))


def exported_losses():
    net = nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 10))
    return Model(net, (16,), 10, label=(10,), own_loss=True, multi_hot=True, train=ExportedLosses(net))


class MetricLearning(nn.Module):
    """Re-identification's softmax + triplet training of an embedding: the cross-entropy of a
    classifier head, F.triplet_margin_loss of each embedding with its positive (the sample's
    features reversed) and negative (the next sample's embedding), once at p=2 and once at p=3
    with swap, and F.pairwise_distance (p=1) to a learned center (torch 1.13 exports neither
    triplet_margin_loss nor torch's own pairwise_distance; scripts/of_export.py writes both). Its
    negatives couple the batch's samples, so it has no data-parallel check (DDP would draw them
    from each rank's part)."""

    def __init__(self, embed, head):
        super().__init__()
        self.embed, self.head = embed, head
        self.center = nn.Parameter(torch.full((16,), 0.1))

    def forward(self, input, label):
        e, positive = self.embed(input), self.embed(input.flip(1))
        negative = e.roll(1, 0)
        return (F.cross_entropy(self.head(e), label) + F.triplet_margin_loss(e, positive, negative, margin=0.3)
                + 0.5 * F.triplet_margin_loss(e, positive, negative, p=3, swap=True)
                + 0.1 * F.pairwise_distance(e, self.center.expand_as(e), p=1).mean())


def metric_learning():
    embed, head = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 16)), nn.Linear(16, 10)
    loss = MetricLearning(embed, head)
    return Model(nn.Sequential(embed, head), (16,), 10, own_loss=True, train=loss)


class ExportedMath(nn.Module):
    """Tensor functions torch 1.13 cannot export, which scripts/of_export.py writes out:
    Tensor.unflatten (attention's heads), torch.logaddexp, torch.expm1, torch.hypot, torch.frac,
    torch.xlogy (an entropy, and x = 0 where a ReLU is off), torch.diff, torch.logcumsumexp (over
    the heads) and torch.diag_embed."""

    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(16, 24), nn.Linear(4 * 12, 10)

    def forward(self, x):
        q = self.fc1(x).unflatten(1, (4, 6))
        a = torch.logaddexp(q, q.flip(2)) + torch.expm1(q.tanh()) + torch.hypot(q, q.roll(1, 2)) + torch.frac(q * 2)
        p = torch.softmax(q, 2)
        entropy = -torch.xlogy(p, p).sum(2, keepdim=True) + torch.xlogy(q.relu(), q.abs() + 0.5)
        scaled = torch.diag_embed(q[:, :, :3].sigmoid()) @ q[:, :, 3:].unsqueeze(3)  # [N,4,3,1]
        return self.fc2(torch.cat([a + entropy, torch.diff(q, dim=2), torch.logcumsumexp(q[:, :, :1] * 3, 1) + scaled[:, :, :1, 0]],
                                  2).flatten(1))


def exported_math():
    return Model(ExportedMath(), (16,), 10, written_out=True)


def lrn():
    # The original AlexNet's and GoogLeNet's local response normalization across channels: torch
    # exports its squeeze of the pooled squares as an If (the size is not known while exporting),
    # whose condition ofc folds. AlexNet's own parameters, and a strong one whose mistakes show.
    return Model(nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.LocalResponseNorm(5, alpha=1e-4, beta=0.75, k=2.0),
                               nn.MaxPool2d(2), nn.Conv2d(16, 16, 3, padding=1), nn.ReLU(),
                               nn.LocalResponseNorm(3, alpha=1.0, beta=0.75, k=1.0), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                               nn.Linear(16, 10)), (3, 8, 8), 10)


class ExportedLayers(nn.Module):
    """torch.nn layers torch 1.13 cannot export as they are (scripts/of_export.py writes them out):
    nn.AdaptiveAvgPool2d to a size that does not divide its input, nn.Threshold with a threshold
    other than 0, nn.Bilinear, convolutions with padding="same" (an even kernel: the extra pad on
    the far side; dilated and grouped; 1-D) and "valid", adaptive max pooling to a size that does
    not divide its input."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.same = nn.Conv2d(8, 8, 4, padding="same")
        self.dilated = nn.Conv2d(8, 8, 3, padding="same", dilation=2, groups=2)
        self.conv1d, self.valid = nn.Conv1d(8, 8, 2, padding="same"), nn.Conv2d(8, 8, 1, padding="valid")
        self.pool = nn.AdaptiveAvgPool2d((3, 3))
        self.fc, self.threshold = nn.Linear(72, 16), nn.Threshold(0.1, -1.0)
        self.bilinear = nn.Bilinear(16, 12, 10)

    def forward(self, x):  # x [N, 3, 7, 7]: 7 does not divide by 3
        h = torch.relu(self.conv(x))
        h = torch.relu(self.same(h)) + self.dilated(h)
        h = self.valid(h) + self.conv1d(h.flatten(2)).view_as(h)
        h = self.threshold(self.fc((self.pool(h) + F.adaptive_max_pool2d(h, (3, 3))).flatten(1)))
        return self.bilinear(h, h[:, 2:14])


def exported_layers():
    return Model(ExportedLayers(), (3, 7, 7), 10, written_out=True)


class FocalLoss(nn.Module):
    """torchvision.ops.sigmoid_focal_loss (RetinaNet's) on a classifier's logits, its targets
    F.one_hot(label, classes).float(), as detection and imbalanced-classification code calls it."""

    def forward(self, logits, label):
        import torchvision
        targets = F.one_hot(label, logits.shape[1]).float()
        return torchvision.ops.sigmoid_focal_loss(logits, targets, alpha=0.25, gamma=2.0, reduction="mean")


def focal():
    net = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 10))
    return Model(net, (16,), 10, own_loss=True, train=WithLoss(net, FocalLoss()))


class MixtureOfExperts(nn.Module):
    """A sparsely gated mixture of experts as small PyTorch implementations write it (top-2 gating,
    every expert computed): a router's two largest logits per sample (torch.topk), a softmax over
    them, the gates spread over the experts by F.one_hot of the choices, each expert's output
    weighted by its gate; plus Switch Transformer's load-balancing term (the mean router
    probability times the fraction of choices, per expert)."""

    def __init__(self, classes=10, experts=4):
        super().__init__()
        self.embed = nn.Linear(16, 32)
        self.router = nn.Linear(32, experts, bias=False)
        self.experts = nn.ModuleList(nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.Linear(64, 32)) for _ in range(experts))
        self.head = nn.Linear(32, classes)

    def forward(self, input, label):
        h = F.relu(self.embed(input))
        logits = self.router(h)
        top, choice = logits.topk(2, dim=-1)
        mask = F.one_hot(choice, logits.shape[-1]).float()  # [n, 2, experts]
        gates = (F.softmax(top, dim=-1).unsqueeze(-1) * mask).sum(1)
        h = h + (gates.unsqueeze(-1) * torch.stack([e(h) for e in self.experts], 1)).sum(1)
        balance = (F.softmax(logits, -1).mean(0) * mask.sum(1).mean(0)).sum() * logits.shape[-1]
        return F.cross_entropy(self.head(h), label) + 0.01 * balance


def moe():
    net = MixtureOfExperts()
    return Model(net, (16,), 10, own_loss=True, train=net)


class ActorCritic(nn.Module):
    """An advantage actor-critic's loss as PyTorch RL code writes it: a shared body, the policy's
    log-probability of the action taken (log_softmax over logits with an invalid action masked
    to -inf, then logp.gather(1, actions)), the advantage (the return minus the value estimate)
    detached in the policy term, the value's squared error, and an entropy bonus over the valid
    actions. The labels are the actions taken; the return is the sample's first feature."""

    def __init__(self, actions=6):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(16, 32), nn.Tanh())
        self.policy, self.value = nn.Linear(32, actions), nn.Linear(32, 1)
        self.register_buffer("invalid", torch.arange(actions) == actions - 1, persistent=False)

    def forward(self, input, label):
        h = self.body(input)
        logits = self.policy(h).masked_fill(self.invalid, float("-inf"))
        logp = F.log_softmax(logits, dim=-1)
        advantage = input[:, 0] - self.value(h).squeeze(1)
        policy = -(logp.gather(1, label.unsqueeze(1)).squeeze(1) * advantage.detach()).mean()
        entropy = -(F.softmax(logits, dim=-1) * logp.masked_fill(self.invalid, 0.0)).sum(1).mean()
        return policy + 0.5 * advantage.pow(2).mean() - 0.01 * entropy


def actor_critic():
    net = ActorCritic()
    return Model(net, (16,), 5, own_loss=True, train=net)


class WeightNormed(nn.Module):
    """A MelGAN/HiFi-GAN-style 1-D stack with nn.utils.weight_norm on every convolution (weight =
    g * v / |v|, trained as weight_g and weight_v): a conv, LeakyReLU(0.2), a dilated residual
    conv, a strided conv, then a weight-normed Linear head over the pooled channels."""

    def __init__(self, classes=10):
        super().__init__()
        wn = nn.utils.weight_norm
        self.pre = wn(nn.Conv1d(4, 8, 7, padding=3))
        self.res = wn(nn.Conv1d(8, 8, 3, dilation=3, padding=3))
        self.down = wn(nn.Conv1d(8, 16, 4, stride=2, padding=1))
        self.head = wn(nn.Linear(16, classes))

    def forward(self, x):
        h = F.leaky_relu(self.pre(x), 0.2)
        h = h + self.res(F.leaky_relu(h, 0.2))
        return self.head(F.leaky_relu(self.down(h), 0.2).mean(-1))


def weight_norm():
    return Model(WeightNormed(), (4, 16), 10)


def deeplab_aux():
    import torchvision
    from torchvision.models.segmentation.deeplabv3 import _deeplabv3_mobilenetv3
    # deeplabv3_mobilenet_v3_large(num_classes=4, aux_loss=True) as torchvision builds it, on a
    # 0.25-wide backbone; trained as its reference script trains it.
    backbone = torchvision.models.mobilenet_v3_large(width_mult=0.25, dilated=True)
    net = _deeplabv3_mobilenetv3(backbone, 4, aux=True)
    return Model(net, (3, 64, 64), 4, label=(64, 64), lr_scale=0.1, float64_referee=True, ignore_index=255,
                 own_loss=True, train=SegmentationLoss(net))


def shufflenet():
    import torchvision
    return Model(torchvision.models.shufflenet_v2_x0_5(num_classes=10), (3, 64, 64), 10, lr_scale=0.1,
                 float64_referee=True)


def efficientnet_b0():
    import torchvision
    from torchvision.models.efficientnet import EfficientNet, _efficientnet_conf
    # efficientnet_b0's blocks at a quarter of the width and half the depth.
    setting, last = _efficientnet_conf("efficientnet_b0", width_mult=0.25, depth_mult=0.5)
    return Model(EfficientNet(setting, dropout=0.0, stochastic_depth_prob=0.0, num_classes=10, last_channel=last),
                 (3, 64, 64), 10, lr_scale=0.02, float64_referee=True)


def vit():
    from torchvision.models.vision_transformer import VisionTransformer
    net = VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=4, hidden_dim=32, mlp_dim=64,
                            num_classes=10)
    # torchvision starts the head at zero (it expects fine-tuning): the outputs would all be 0.
    nn.init.normal_(net.heads.head.weight, std=0.2)
    # Trained with label smoothing 0.11, as torchvision's recipe trains its ViTs.
    return Model(net, (3, 32, 32), 10, zero_grad=key_bias(
        f"encoder.layers.encoder_layer_{i}.self_attention.in_proj_bias" for i in range(2)), label_smoothing=0.11)


def convnext():
    from torchvision.models.convnext import ConvNeXt, CNBlockConfig
    setting = [CNBlockConfig(16, 32, 1), CNBlockConfig(32, 64, 1), CNBlockConfig(64, None, 1)]
    return Model(ConvNeXt(setting, stochastic_depth_prob=0.0, num_classes=10), (3, 32, 32), 10)


class Decoder(nn.Module):
    def __init__(self, batch_first=False):
        super().__init__()
        layer = nn.TransformerDecoderLayer(32, 4, 64, dropout=0.0, batch_first=batch_first)
        self.decoder = nn.TransformerDecoder(layer, 2)
        self.memory = nn.Parameter(torch.randn(6, 1, 32))
        self.fc = nn.Linear(32, 10)
        self.batch_first = batch_first

    def forward(self, x):  # x [batch, seq, 32] either way
        t = x.size(1)
        mask = torch.triu(torch.full((t, t), float("-inf")), 1)
        if self.batch_first:
            mem = self.memory.transpose(0, 1).expand(x.size(0), -1, -1)
            return self.fc(self.decoder(x, mem, tgt_mask=mask).mean(dim=1))
        x = x.transpose(0, 1)
        mem = self.memory.expand(-1, x.size(1), -1)
        return self.fc(self.decoder(x, mem, tgt_mask=mask).mean(dim=0))


def decoder(batch_first=False):
    return Model(Decoder(batch_first), (8, 32), 10, zero_grad=key_bias(
        f"decoder.layers.{i}.{a}.in_proj_bias" for i in range(2) for a in ("self_attn", "multihead_attn")))


def decoder_batch_first():
    return decoder(batch_first=True)


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = nn.MultiheadAttention(32, 4, batch_first=True)
        self.fc = nn.Linear(32, 10)

    def forward(self, x):
        y, _ = self.attn(x, x, x, need_weights=False)
        return self.fc(y.mean(dim=1))


def mha():
    return Model(Attention(), (8, 32), 10, zero_grad=key_bias(["attn.in_proj_bias"]))


def gelu_tanh():
    return Model(nn.Sequential(nn.Linear(16, 32), nn.GELU(approximate="tanh"), nn.Linear(32, 10)), (16,), 10)


class Recurrent(nn.Module):
    def __init__(self, cell):
        super().__init__()
        self.rnn = cell(16, 24, num_layers=2, batch_first=True)
        self.fc = nn.Linear(24, 10)

    def forward(self, x):
        y, _ = self.rnn(x)
        return self.fc(y[:, -1])


def lstm():
    return Model(Recurrent(nn.LSTM), (6, 16), 10)


def gru():
    # Trained as RNN recipes often are, with clip_grad_value_ (0.02 binds on part of the gradients
    # here: the check fails without it).
    return Model(Recurrent(nn.GRU), (6, 16), 10, clip_value=0.02)


class Bidirectional(nn.Module):
    """One bidirectional layer (batch_first=False) from learned initial states."""

    def __init__(self, cell):
        super().__init__()
        self.rnn = cell(16, 24, bidirectional=True)
        self.h0 = nn.Parameter(0.5 * torch.randn(2, 1, 24))
        self.c0 = nn.Parameter(0.5 * torch.randn(2, 1, 24)) if cell is nn.LSTM else None
        self.fc = nn.Linear(48, 10)

    def forward(self, x):
        x = x.transpose(0, 1)  # [seq, batch, 16]
        h0 = self.h0.expand(-1, x.size(1), -1).contiguous()
        state = (h0, self.c0.expand(-1, x.size(1), -1).contiguous()) if self.c0 is not None else h0
        y, _ = self.rnn(x, state)
        return self.fc(y.mean(dim=0))


class Elman(nn.Module):
    """nn.RNN: two tanh layers, then a bidirectional relu one from a learned h0; the mean of its
    outputs over the sequence and its final states both feed the classifier."""

    def __init__(self):
        super().__init__()
        self.rnn = nn.RNN(16, 24, num_layers=2, batch_first=True)
        self.relu_rnn = nn.RNN(24, 12, nonlinearity="relu", bidirectional=True)
        self.h0 = nn.Parameter(0.5 * torch.randn(2, 1, 12))
        self.fc = nn.Linear(24, 10)

    def forward(self, x):
        y, _ = self.rnn(x)
        y = y.transpose(0, 1)  # [seq, batch, 24]
        z, hn = self.relu_rnn(y, self.h0.expand(-1, y.size(1), -1).contiguous())
        return self.fc(z.mean(dim=0) + hn.transpose(0, 1).reshape(-1, 24))


def rnn():
    return Model(Elman(), (6, 16), 10)


class NanToNum(nn.Module):
    """Cleans tabular features itself: NaN and infinities replaced, their counts kept as features."""

    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(12, 32), nn.Linear(35, 10)

    def forward(self, x):
        missing = torch.isnan(x).float().sum(1, keepdim=True)
        infinite = torch.isinf(x).float().sum(1, keepdim=True)
        finite = torch.isfinite(x).float().mean(1, keepdim=True)
        h = torch.relu(self.fc1(torch.nan_to_num(x, nan=0.0, posinf=4.0, neginf=-4.0)))
        return self.fc2(torch.cat([h, missing, infinite, finite], 1))


def nan_to_num():
    return Model(NanToNum(), (12,), 10, missing_values=True)


class Bucketize(nn.Module):
    """Embeds two features by their bucket (ids computed from floats at run time) beside an MLP."""

    def __init__(self):
        super().__init__()
        self.by_quantile, self.by_value = nn.Embedding(8, 6), nn.Embedding(8, 6)
        self.mlp = nn.Sequential(nn.Linear(12, 24), nn.ReLU())
        self.out = nn.Linear(36, 10)

    def forward(self, x):
        quantile = (torch.sigmoid(x[:, 0]) * 8).long().clamp(max=7)
        value = torch.floor(2 * x[:, 1]).long().clamp(-4, 3) + 4
        return self.out(torch.cat([self.mlp(x), self.by_quantile(quantile), self.by_value(value)], 1))


def bucketize():
    return Model(Bucketize(), (12,), 10)


class Video(nn.Module):
    """A small video classifier from torchvision's video ResNet blocks (torchvision.models.video.resnet:
    r3d_18's Conv3DSimple block, r2plus1d_18's Conv2Plus1D one) between nn.Conv3d, nn.BatchNorm3d,
    nn.MaxPool3d and nn.AvgPool3d as users write them."""

    def __init__(self):
        from torchvision.models.video.resnet import BasicBlock, Conv2Plus1D, Conv3DSimple
        super().__init__()
        self.stem = nn.Sequential(nn.Conv3d(3, 8, (3, 7, 7), stride=(1, 2, 2), padding=(1, 3, 3), bias=False),
                                  nn.BatchNorm3d(8), nn.ReLU(inplace=True),
                                  nn.MaxPool3d((1, 3, 3), stride=(1, 2, 2), padding=(0, 1, 1)))
        self.layer1 = BasicBlock(8, 8, Conv3DSimple)
        down = nn.Sequential(nn.Conv3d(8, 16, 1, stride=2, bias=False), nn.BatchNorm3d(16))
        self.layer2 = BasicBlock(8, 16, Conv2Plus1D, stride=2, downsample=down)
        self.pool = nn.Sequential(nn.AvgPool3d((3, 2, 2), stride=1, padding=(1, 0, 0), count_include_pad=False),
                                  nn.MaxPool3d(2, stride=2, ceil_mode=True), nn.AdaptiveAvgPool3d(1))
        self.fc = nn.Linear(16, 10)

    def forward(self, x):  # x [N, 3, 8, 32, 32]: 8 frames
        return self.fc(self.pool(self.layer2(self.layer1(self.stem(x)))).flatten(1))


def video():
    return Model(Video(), (3, 8, 32, 32), 10, lr_scale=0.1, float64_referee=True)


class UNet3d(nn.Module):
    """A 3-D U-Net's shape, as volumetric (medical) segmentation writes it: a Conv3d encoder, a
    MaxPool3d down, an nn.ConvTranspose3d up (stride 2, output_padding 1) beside a trilinear
    upsampling, the skip concatenated, then a 1x1x1 head, resized (nearest, to a given size) and
    averaged over the volume into class scores."""

    def __init__(self):
        super().__init__()
        self.enc = nn.Sequential(nn.Conv3d(2, 8, 3, padding=1, bias=False), nn.BatchNorm3d(8), nn.ReLU())
        self.down = nn.Sequential(nn.MaxPool3d(2), nn.Conv3d(8, 16, 3, padding=1), nn.ReLU())
        self.up = nn.ConvTranspose3d(16, 8, 3, stride=2, padding=1, output_padding=1)
        self.lift = nn.Conv3d(16, 8, 1)
        self.dec = nn.Sequential(nn.Conv3d(16, 8, 3, padding=1), nn.ReLU())
        self.head = nn.Conv3d(8, 10, 1)

    def forward(self, x):  # x [N, 2, 8, 12, 12]
        e = self.enc(x)
        d = self.down(e)
        u = self.up(d) + self.lift(nn.functional.interpolate(d, scale_factor=2, mode="trilinear"))
        h = self.head(self.dec(torch.cat([e, u], 1)))
        return nn.functional.interpolate(h, size=(5, 7, 9), mode="nearest").mean(dim=(2, 3, 4))


def unet3d():
    # Judged against float64: under AdamW, PyTorch's own float32 down.1.weight ends 1.2e-3 (of its
    # max) from float64's, `of`'s 1e-5.
    return Model(UNet3d(), (2, 8, 12, 12), 10, float64_referee=True)


class MessagePassing(nn.Module):
    """Two rounds of sum aggregation over a fixed edge list, then a one-hot of the best-scored node
    and a pooling into run-time clusters."""

    def __init__(self):
        super().__init__()
        self.register_buffer("src", torch.tensor([0, 1, 2, 3, 4, 5, 0, 2, 4, 1]), persistent=False)
        self.register_buffer("dst", torch.tensor([1, 2, 3, 4, 5, 0, 3, 3, 0, 3]), persistent=False)
        self.embed, self.msg1, self.msg2 = nn.Linear(8, 16), nn.Linear(16, 16), nn.Linear(16, 16)
        self.score, self.out = nn.Linear(16, 1), nn.Linear(16 + 3 * 16, 10)

    def propagate(self, h, lin):
        messages = lin(h).index_select(1, self.src)                      # [batch, edges, 16]
        return torch.relu(h + torch.zeros_like(h).index_add(1, self.dst, messages))

    def forward(self, x):
        h = self.propagate(self.propagate(torch.relu(self.embed(x)), self.msg1), self.msg2)  # [batch, 6, 16]
        scores = self.score(h).squeeze(-1)                                # [batch, 6]
        best = torch.zeros_like(scores).scatter_(1, scores.argmax(1, keepdim=True), 1.0)
        picked = (best.unsqueeze(-1) * h).sum(1)
        cluster = (torch.sigmoid(scores) * 3).long().clamp(max=2)         # [batch, 6] in 0..2
        pooled = torch.zeros(h.shape[0], 3, 16).scatter_add(1, cluster.unsqueeze(-1).expand(-1, -1, 16), h)
        return self.out(torch.cat([picked, pooled.flatten(1)], 1))


def scatter():
    return Model(MessagePassing(), (6, 8), 10)


def densenet():
    from torchvision.models import DenseNet
    return Model(DenseNet(growth_rate=8, block_config=(2, 2, 2), num_init_features=16, num_classes=10), (3, 32, 32), 10,
                 lr_scale=0.1, float64_referee=True)


class Pads(nn.Module):
    def __init__(self):
        super().__init__()
        # Reflection after a layer: its gradient flows back into conv1.
        self.net = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.ReflectionPad2d(2), nn.Conv2d(8, 8, 5), nn.ReLU(),
                                 nn.ReplicationPad2d((1, 2, 0, 1)), nn.Conv2d(8, 8, 3), nn.ReLU(),
                                 nn.ZeroPad2d(1), nn.AvgPool2d(2))
        self.head = nn.Linear(8 * 4 * 6, 10)

    def forward(self, x):
        return self.head(F.pad(self.net(x), (0, 1), value=0.5).flatten(1))


def pads():
    return Model(Pads(), (3, 8, 8), 10)


def swin():
    from torchvision.models import SwinTransformer
    return Model(SwinTransformer(patch_size=[4, 4], embed_dim=16, depths=[2, 2], num_heads=[2, 4], window_size=[4, 4],
                                 stochastic_depth_prob=0.0, num_classes=10), (3, 32, 32), 10)


class Pointwise(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc0, self.fc1 = nn.Linear(16, 16), nn.Linear(16, 32)
        self.fc2, self.fc3 = nn.Linear(32, 32), nn.Linear(32, 32)
        self.fc4 = nn.Linear(32, 32)
        self.selu, self.celu = nn.SELU(), nn.CELU(0.7)
        self.head = nn.Linear(35 + 32, 10)

    def forward(self, x):
        x = self.fc0(x)
        x = torch.cat([torch.sin(x[:, :8]), torch.cos(x[:, 8:])], dim=1)
        h = F.mish(self.fc3(F.softplus(self.fc2(F.elu(self.fc1(x), alpha=0.5)))))
        stats = torch.stack([torch.log(torch.abs(h) + 1).sum(dim=1), h.abs().sum(dim=1), h.std(dim=1)], dim=1)
        s = self.celu(self.fc4(self.selu(h)))
        return self.head(torch.cat([h, stats, s], dim=1))


def pointwise():
    return Model(Pointwise(), (16,), 10)


def conv1d():
    # No bias before the BatchNorm (bn_cnn says why); the second convolution has one.
    net = nn.Sequential(nn.Conv1d(4, 16, 5, padding=2, bias=False), nn.BatchNorm1d(16), nn.ReLU(), nn.MaxPool1d(2),
                        nn.Conv1d(16, 16, 3, stride=2, dilation=2, padding=2), nn.ReLU(), nn.AvgPool1d(2),
                        nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Linear(16, 10))
    return Model(net, (4, 32), 10)


class UNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.down1 = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.ReLU())
        self.down2 = nn.Sequential(nn.Conv2d(8, 16, 3, stride=2, padding=1), nn.ReLU())
        self.up1 = nn.ConvTranspose2d(16, 8, 3, stride=2, padding=1, output_padding=1)
        self.up2 = nn.ConvTranspose2d(16, 8, 2, stride=2, groups=2)
        self.up3 = nn.ConvTranspose1d(8, 4, 3, stride=2, bias=False)
        self.head = nn.Linear(4 * 513, 10)

    def forward(self, x):
        d1 = self.down1(x)                                    # [4, 8, 8, 8]
        u = torch.relu(self.up1(self.down2(d1)))              # [4, 8, 8, 8]
        u = torch.relu(self.up2(torch.cat([u, d1], dim=1)))   # [4, 8, 16, 16]
        u = self.up3(u.flatten(2))                            # [4, 4, 513]
        return self.head(u.flatten(1))


def unet():
    return Model(UNet(), (3, 16, 16), 10)


class Upsample(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1, self.c2, self.c3 = nn.Conv2d(3, 4, 3, padding=1), nn.Conv2d(4, 4, 3, padding=1), nn.Conv2d(4, 2, 3, padding=1)
        self.up1 = nn.Upsample(scale_factor=2, mode="nearest")
        self.up2 = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)
        self.head = nn.Linear(2 * 2 * 10 * 10, 10)

    def forward(self, x):
        x = self.up1(torch.relu(self.c1(x)))                       # [4, 4, 12, 12]
        x = F.interpolate(x, scale_factor=0.5, mode="bicubic")     # [4, 4, 6, 6]
        x = self.up2(torch.relu(self.c2(x)))                       # [4, 4, 12, 12]
        x = F.interpolate(x, size=(9, 9), mode="bicubic", align_corners=True)
        x = F.interpolate(self.c3(x), size=(10, 10), mode="bilinear", align_corners=True)
        x = F.interpolate(x.flatten(2), scale_factor=2, mode="linear")  # [4, 2, 200]
        return self.head(x.flatten(1))


def upsample():
    return Model(Upsample(), (3, 6, 6), 10)


def norms():
    # No bias before a normalization (bn_cnn says why).
    net = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.GroupNorm(2, 8), nn.ReLU(),
                        nn.Conv2d(8, 8, 3, padding=1, bias=False), nn.InstanceNorm2d(8), nn.ReLU(),
                        nn.Conv2d(8, 8, 3, padding=1, bias=False), nn.InstanceNorm2d(8, affine=True), nn.ReLU(),
                        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 10))
    return Model(net, (3, 8, 8), 10)


class MaxOverTime(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv, self.head = nn.Conv1d(4, 8, 3), nn.Linear(8 + 14, 10)

    def forward(self, x):
        h = torch.relu(self.conv(x))                                # [4, 8, 14]
        return self.head(torch.cat([torch.max(h, dim=2).values, torch.amax(h, dim=1)], dim=1))


def maxpool_time():
    return Model(MaxOverTime(), (4, 16), 10)


class Extremum(nn.Module):
    """torch.maximum / torch.minimum (ONNX Max, Min), broadcast, and torch.clamp with tensor
    bounds. twin_a and twin_b start equal, so their maximum ties everywhere: torch gives each
    half of the gradient, and they stay equal only if `of` does the same."""

    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(16, 32), nn.Linear(16, 32)
        self.twin_a, self.twin_b = nn.Linear(32, 32), nn.Linear(32, 32)
        self.twin_b.load_state_dict(self.twin_a.state_dict())
        self.head = nn.Linear(32, 10)

    def forward(self, x):
        a, b = self.fc1(x), self.fc2(x)
        h = torch.maximum(a, b) + torch.minimum(a, b[:, :1])
        h = torch.clamp(h, min=-a.abs(), max=b.abs() + 0.1)
        return self.head(torch.maximum(self.twin_a(h), self.twin_b(h)))


def extremum():
    return Model(Extremum(), (16,), 10)


class Normalize(nn.Module):
    """F.normalize and torch.linalg.vector_norm (ONNX ReduceL2) over the last dim and over
    features. One group of each row is zeroed first: torch's norm gives a zero vector the
    gradient 0 (not 0 / 0), and so must `of`."""

    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(16, 16), nn.Linear(16, 16)
        self.head = nn.Linear(16 + 2 + 16, 10)

    def forward(self, x):
        zero_first = torch.tensor([[0.0], [1.0]])
        g = F.normalize(self.fc1(x).reshape(-1, 2, 8) * zero_first, dim=-1).reshape(-1, 16)
        h = self.fc2(x)
        n = torch.linalg.vector_norm(h.reshape(-1, 2, 8), dim=-1)
        return self.head(torch.cat([g, n, F.normalize(h, dim=1)], dim=1))


class L1Norms(nn.Module):
    """F.normalize(p=1) and x.norm(p=1, dim) (ONNX ReduceL1), one group of each row zeroed as in
    Normalize (|x|'s gradient at 0 is 0, as torch's sign)."""

    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(16, 16), nn.Linear(16, 16)
        self.head = nn.Linear(16 + 2, 10)

    def forward(self, x):
        zero_first = torch.tensor([[0.0], [1.0]])
        g = F.normalize(self.fc1(x).reshape(-1, 2, 8) * zero_first, p=1.0, dim=-1).reshape(-1, 16)
        n = self.fc2(x).reshape(-1, 2, 8).norm(p=1, dim=-1)
        return self.head(torch.cat([g, n], dim=1))


def l1_norms():
    return Model(L1Norms(), (16,), 10)


def normalize():
    return Model(Normalize(), (16,), 10)


def prelu():
    # nn.PReLU per channel on images, one shared slope, and per feature after a Linear.
    net = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.PReLU(8), nn.Conv2d(8, 8, 3, padding=1), nn.PReLU(),
                        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 16), nn.PReLU(16, init=0.1), nn.Linear(16, 10))
    return Model(net, (3, 8, 8), 10)


class Einsum(nn.Module):
    """torch.einsum as people write it: attention over heads, a projection with '...' dims, an
    outer product, a sum over a letter only one operand has, a transpose of one operand."""

    def __init__(self):
        super().__init__()
        self.qkv, self.proj = nn.Linear(16, 48), nn.Parameter(torch.randn(16, 16) * 0.2)
        self.mix = nn.Parameter(torch.randn(4, 8) * 0.3)
        self.head = nn.Linear(16 * 4 + 64 + 8, 10)

    def forward(self, x):                                          # x [B, 4, 16]
        q, k, v = self.qkv(x).reshape(-1, 4, 3, 2, 8).permute(2, 0, 3, 1, 4)   # [B, 2 heads, 4, 8] each
        att = torch.einsum("bhqd,bhkd->bhqk", q, k).softmax(dim=-1)
        y = torch.einsum("bhqk,bhkd->bqhd", att, v).reshape(-1, 4, 16)
        y = torch.einsum("...i,ij->...j", y, self.proj)            # [B, 4, 16]
        outer = torch.einsum("bi,bj->bij", y[:, 0, :8], y[:, 1, 8:]).flatten(1)  # [B, 64]
        summed = torch.einsum("bti,tj->bj", y[:, :, :4], self.mix)   # i summed away: [B, 8]
        flipped = torch.einsum("bti->bit", y)                     # [B, 16, 4]
        return self.head(torch.cat([flipped.flatten(1), outer, summed], dim=1))


def einsum():
    return Model(Einsum(), (4, 16), 10, zero_grad=key_bias(["qkv.bias"], 16))


class Rearrange(nn.Module):
    """The ops `of` writes as others (composites): x.repeat (Tile), nn.PixelShuffle (DepthToSpace),
    torch.amin and x.min(dim) (ReduceMin), torch.logsumexp (ReduceLogSumExp), torch.cumsum
    (CumSum), torch.flip (Slice with negative steps) and torch.gather with fixed indices
    (GatherElements; a repeated index sums its gradients)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 8, 3, padding=1)
        self.shuffle = nn.PixelShuffle(2)
        self.fc = nn.Linear(16, 24)
        self.head = nn.Linear(2 * 64 + 6 + 4 + 1 + 24 + 4 * 24 + 24 + 12, 10)

    def forward(self, x):                                          # x [B, 2, 4, 4]
        img = self.shuffle(torch.relu(self.conv(x)))              # [B, 2, 8, 8]
        img = torch.flip(img, [3]) + img.repeat(1, 1, 2, 1)[:, :, 4:12, :]
        h = self.fc(x.flatten(2).transpose(1, 2).reshape(-1, 4, 8).flatten(1)[:, :16])  # [B, 24]
        seq = h.reshape(-1, 4, 6)
        stats = [torch.amin(seq, dim=1), seq.min(dim=2).values, torch.logsumexp(h, dim=1, keepdim=True)]
        running = torch.cumsum(seq, dim=1).flatten(1) + 0.1 * torch.cumsum(h, dim=1)
        index = torch.tensor([[2, 0, 5], [1, 1, 3], [4, 2, 0], [5, 3, 1]]).expand(seq.shape[0], 4, 3)
        picked = torch.gather(seq, 2, index).flatten(1)
        return self.head(torch.cat([img.flatten(1)] + stats + [running, h.repeat(1, 4), h.flip(1), picked], dim=1))


def rearrange():
    return Model(Rearrange(), (2, 4, 4), 10)


class Masks(nn.Module):
    """Masks made from run-time data: torch.where(h > 0, ...), masked_fill, &, |, ~, >=, <=, !=,
    a bool mask cast to float for arithmetic (mask.float()), nn.Hardshrink and nn.Softshrink."""

    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(16, 32), nn.Linear(32, 32)
        self.hard, self.soft = nn.Hardshrink(0.1), nn.Softshrink(0.2)
        self.head = nn.Linear(32 * 4, 10)

    def forward(self, x):
        h = self.fc1(x)
        a = torch.where(h > 0, h, 0.1 * h)
        b = self.fc2(a).masked_fill(a[:, :1] < 0, 0.0)
        band = ((b >= -0.5) & (b <= 0.5)) | ~(b != 0)
        c = band.float() * b + self.hard(b)
        return self.head(torch.cat([a, b, c, self.soft(h)], dim=1))


def masks():
    return Model(Masks(), (16,), 10)


class Predict(nn.Module):
    """A classifier exported for serving: the class index (ArgMax, an int64 output)."""

    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x):
        return self.net(x).argmax(dim=1)


def argmax():
    net = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 10))
    return Model(Predict(net), (16,), 10, train=net)


def bn_cnn():
    # Convolutions without bias, as before every BatchNorm of torchvision's: a bias there has zero
    # gradient (BatchNorm removes any shift), which Adam turns into rounding-noise steps.
    return Model(nn.Sequential(nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU(),
                               nn.Conv2d(8, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU(),
                               nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 10)), (3, 8, 8), 10)


def bn_batch_stats():
    # track_running_stats=False: batch statistics in train and eval mode alike, no buffers; the
    # export computes the batch's mean and variance and feeds them as the running ones.
    return Model(nn.Sequential(nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8, track_running_stats=False), nn.ReLU(),
                               nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 16, bias=False),
                               nn.BatchNorm1d(16, track_running_stats=False), nn.ReLU(), nn.Linear(16, 10)), (3, 8, 8), 10)


def bn_cumulative():
    # nn.BatchNorm*(momentum=None): running statistics are the cumulative average of every batch's,
    # which the export writes as momentum 0 (torch's 1.0: the last batch's) and
    # scripts/of_export.py lists.
    return Model(nn.Sequential(nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8, momentum=None), nn.ReLU(),
                               nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 16, bias=False),
                               nn.BatchNorm1d(16, momentum=None), nn.ReLU(), nn.Linear(16, 10)), (3, 8, 8), 10)


class SimSiam(nn.Module):
    """SimSiam's training step (Chen & He 2021, its reference main_simsiam.py) on two views of a
    sample (its feature halves): the symmetric negative cosine of each view's prediction to the
    other's projection, the projection detached, plus an online linear probe on a detached
    projection (self-supervised code trains one beside the encoder, in the same step). Every
    `.detach()` stops a gradient that the ONNX export would otherwise let through, and each
    BatchNorm runs twice a step (its running statistics blend both views' in turn). Checked with
    SGD: the predictor's bias feeds a BatchNorm, so its exact gradient is 0, which Adam's
    normalisation turns into steps of rounding noise on either side."""

    def __init__(self, classes=10):
        super().__init__()
        # SimSiam's projector ends in a BatchNorm without affine parameters. Its predictor's first
        # Linear has a bias here: without, the batch mean its BatchNorm sees is 0 in exact
        # arithmetic and the running mean rounding noise (1e-8) on either side.
        self.encoder = nn.Sequential(nn.Linear(8, 16, bias=False), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 16, bias=False),
                                     nn.BatchNorm1d(16, affine=False))
        self.predictor = nn.Sequential(nn.Linear(16, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 16))
        self.probe = nn.Linear(16, classes)

    def forward(self, input, label):
        z1, z2 = self.encoder(input[:, :8]), self.encoder(input[:, 8:])
        p1, p2 = self.predictor(z1), self.predictor(z2)
        ssl = -(F.cosine_similarity(p1, z2.detach(), dim=-1).mean() + F.cosine_similarity(p2, z1.detach(), dim=-1).mean()) * 0.5
        return ssl + F.cross_entropy(self.probe(z1.detach()), label)


def stop_gradient():
    net = SimSiam()
    return Model(net, (16,), 10, own_loss=True, train=net)


class QuantAware(nn.Module):
    """A CNN trained quantization-aware as such code writes it by hand: activations fake-quantized
    to a grid of 1/8 (round, clamp) and binary weights with XNOR-Net's scale (sign), each with a
    straight-through estimator `x + (q - x).detach()`; an nn.LPPool2d, which torch writes with
    sign(x) on the gradient path (sign's gradient is 0); and floor and ceil on the gradient path
    (zero gradients of their own: frac = h - floor(h) passes 1, ceil(4h)/4 none)."""

    def __init__(self, classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1)
        self.pool = nn.LPPool2d(2, 2)
        self.fc = nn.Linear(3 * 8 * 4 * 4, classes)

    def forward(self, x):
        h = F.relu(self.conv1(x))
        q = torch.clamp(torch.round(h * 8), 0, 15) / 8  # 4-bit activations
        h = h + (q - h).detach()
        w = self.conv2.weight
        binary = torch.sign(w) * w.abs().mean()
        h = F.conv2d(h, w + (binary - w).detach(), self.conv2.bias, padding=1)
        h = self.pool(h).flatten(1)
        return self.fc(torch.cat([h, h - torch.floor(h), torch.ceil(h * 4) / 4], 1))


def quant_aware():
    return Model(QuantAware(), (3, 8, 8), 10)


class VQVAE(nn.Module):
    """A VQ-VAE's training step (van den Oord et al. 2017) as its common PyTorch implementations
    write it: each of two 4-wide latents of a sample takes its nearest codebook entry (argmin of
    squared distances, then an nn.Embedding lookup), the codebook loss and the commitment loss
    (beta 0.25) each detach one side, the decoder reads the latents through a straight-through
    estimator, and a linear probe reads the detached codes (for the labels)."""

    def __init__(self, classes=10):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 8))
        self.codebook = nn.Embedding(12, 4)
        self.decoder = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 16))
        self.probe = nn.Linear(8, classes)

    def forward(self, input, label):
        z = self.encoder(input).reshape(-1, 4)
        codes = self.codebook.weight
        distance = z.pow(2).sum(1, keepdim=True) - 2 * z @ codes.t() + codes.pow(2).sum(1)
        zq = self.codebook(distance.argmin(1))
        vq = ((zq - z.detach()) ** 2).mean() + 0.25 * ((z - zq.detach()) ** 2).mean()
        zq = z + (zq - z).detach()
        reconstruction = ((self.decoder(zq.reshape(-1, 8)) - input) ** 2).mean()
        return reconstruction + vq + F.cross_entropy(self.probe(zq.detach().reshape(-1, 8)), label)


def vq_vae():
    net = VQVAE()
    return Model(net, (16,), 10, own_loss=True, train=net)


def lstm_bi():
    return Model(Bidirectional(nn.LSTM), (6, 16), 10)


def gru_bi():
    return Model(Bidirectional(nn.GRU), (6, 16), 10)


class LayerNorms(nn.Module):
    """nn.LayerNorm's forms: over the last dim, over the last two, and without affine (which
    fuse-layer-norm leaves written out below opset 17; at 17 torch 1.13 writes it as a
    LayerNormalization without its required Scale, which onnx's checker refuses)."""

    def __init__(self):
        super().__init__()
        self.fc1, self.ln1 = nn.Linear(16, 32), nn.LayerNorm(32)
        self.fc2, self.ln2 = nn.Linear(32, 24), nn.LayerNorm((4, 6))
        self.ln3 = nn.LayerNorm(24, elementwise_affine=False)
        self.fc3 = nn.Linear(24, 10)

    def forward(self, x):
        h = nn.functional.gelu(self.ln1(self.fc1(x)))
        h = self.ln2(self.fc2(h).reshape(-1, 4, 6)).reshape(-1, 24)
        return self.fc3(self.ln3(h))


def layer_norms():
    return Model(LayerNorms(), (16,), 10)


MODELS = dict(zip(MODEL_NAMES, [linear3d, mlp_nobias, resnet18, mobilenet_v2, gpt, encoder, mobilenet_v3_small,
                                mobilenet_v3_large, efficientnet_b0, vit, convnext, decoder, mha, gelu_tanh, lstm, gru,
                                lstm_bi, gru_bi, bn_cnn, layer_norms, resnet50, gpt_tied, encoder_seq_first,
                                decoder_batch_first, nanogpt, densenet, pads, swin, pointwise, conv1d, unet, upsample, norms, maxpool_time,
                                extremum, normalize, prelu, einsum, rearrange, masks, argmax, segment, shufflenet,
                                weighted_ce, summed_ce, deeplab_aux, multilabel, nll, pos_encoding, finetune,
                                padded_lm, bn_cumulative, gpt_llrd, llama, bn_batch_stats, stop_gradient, quant_aware, vq_vae, mixup, focal, moe, actor_critic, weight_norm, l1_norms, rnn, nan_to_num, bucketize, scatter, video, unet3d, exported_losses, exported_layers, linear_attention, recommender, gem, metric_learning, lrn, exported_math]))


def build(name):
    torch.manual_seed(0)
    try:
        return MODELS[name]()
    except ImportError as e:  # torchvision
        raise CannotRun(f"{name} needs {e.name or e}")


# ---------------------------------------------------------------- data

def make_data(m, work):
    """STEPS batches: features [n, *feature], labels [n, *label] as numpy arrays, and the --data
    argument that feeds them to `ofrun` in that order (with --no-shuffle)."""
    rng = np.random.default_rng(0)  # independent of the model's torch seed
    n = STEPS * BATCH
    if m.tokens:
        # Sample i is tokens [i*seq, i*seq + seq] (ofrun's token layout): features the first seq,
        # labels the last seq. One more token than n*seq makes exactly n samples.
        seq = m.feature[0]
        corpus = rng.integers(0, m.classes, n * seq + 1).astype(np.uint16)
        path = os.path.join(work, "corpus.u16")
        corpus.tofile(path)
        idx = np.arange(n)[:, None] * seq + np.arange(seq)[None, :]
        return corpus[idx].astype(np.int64), corpus[idx + 1].astype(np.int64), f"tokens:{path},dtype=uint16"
    features = rng.standard_normal((n,) + m.feature).astype(np.float32)
    if m.missing_values:
        flat = features.reshape(-1)
        flat[::7], flat[3::11], flat[5::13] = np.nan, np.inf, -np.inf
    if m.multi_hot:
        labels = (rng.random((n,) + m.label) < 0.3).astype(np.float32)
    elif m.mixup:
        eye, lam = np.eye(m.classes), rng.beta(0.2, 0.2, (n, 1))
        labels = (lam * eye[rng.integers(0, m.classes, n)] + (1 - lam) * eye[rng.integers(0, m.classes, n)]).astype(np.float32)
    else:
        labels = rng.integers(0, m.classes, (n,) + m.label).astype(np.int64)
    if m.ignore_index is not None:
        labels.reshape(-1)[::7] = m.ignore_index
    fpath, lpath = os.path.join(work, "features.npy"), os.path.join(work, "labels.npy")
    np.save(fpath, features)
    np.save(lpath, labels)
    return features, labels, f"npy:{fpath},{lpath}"


# ---------------------------------------------------------------- the tools

def tool(args, name, *argv):
    cmd = [os.path.join(args.bin, name), *map(str, argv)]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=TOOL_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise Failure(f"{name} timed out after {TOOL_TIMEOUT_S} s: {' '.join(cmd)}")
    if p.returncode != 0:
        # The tools end a failure with one "<tool>: error: ..." line; progress lines may precede it.
        lines = [ln.strip() for ln in (p.stderr + "\n" + p.stdout).splitlines() if ln.strip()]
        errors = [ln for ln in lines if ln.startswith(f"{name}: error")]
        err = errors[0] if errors else (lines[-1] if lines else "(printed nothing)")
        if p.returncode < 0:
            err = f"killed by signal {-p.returncode}; last line: {err}"
        raise Failure(f"{name} failed (exit {p.returncode}): {err}")
    return p.stdout


def to_opset18(proto):
    """Rewrites an opset-17 export in the forms opset 18 gives newer exporters (torch 1.13 cannot
    write 18, nor can Debian's onnx convert to it): Reduce* take their axes as an input instead
    of an attribute, and a Split into equal parts may say num_outputs instead of sizes."""
    g = proto.graph
    consts = {t.name: numpy_helper.to_array(t) for t in g.initializer}
    for n in g.node:
        if n.op_type == "Constant" and n.attribute and n.attribute[0].name == "value":
            consts[n.output[0]] = numpy_helper.to_array(n.attribute[0].t)
    nodes = []
    for k, n in enumerate(g.node):
        if n.op_type.startswith("Reduce") and n.op_type != "ReduceSum":
            axes = [a for a in n.attribute if a.name == "axes"]
            if axes:  # a Constant node before it, named as exporters name theirs
                name = f"/opset18/{n.op_type}_{k}/axes"
                nodes.append(onnx.helper.make_node("Constant", [], [name], name=name, value=numpy_helper.from_array(
                    np.array(list(axes[0].ints), np.int64))))
                n.attribute.remove(axes[0])
                while len(n.input) < 2:
                    n.input.append("")
                n.input[1] = name
        nodes.append(n)
        if n.op_type == "Split" and len(n.input) > 1 and n.input[1] in consts:
            sizes = consts[n.input[1]].reshape(-1).tolist()
            if len(set(sizes)) == 1:
                del n.input[1]
                n.attribute.append(onnx.helper.make_attribute("num_outputs", len(sizes)))
    del g.node[:]
    g.node.extend(nodes)
    for op in proto.opset_import:
        if op.domain in ("", "ai.onnx"):
            op.version = 18
    return proto


def export(model, x, path, opset, train, input_names=None, written_out=False):
    """torch.onnx.export as a user calls it; its warnings are noise here (the ONNX file is what
    gets checked) and its failure is a tool failure. Opset 18: the export at 17, rewritten.
    written_out: an inference export through scripts/of_export.py's export_for_inference (layers
    torch's default export refuses), as the README tells users."""
    kwargs = dict(training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False) if train else {}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # Training: as scripts/of_export.py's export_for_training (.detach() kept, no_grad refused).
            write = export_keeping_gradient_stops if train else export_for_inference if written_out else torch.onnx.export
            write(model, x, path, opset_version=min(opset, 17), input_names=input_names, **kwargs)
    except Exception as e:  # the exporter raises many types (RuntimeError, SymbolicValueError, ...)
        line = str(e).strip().splitlines()
        raise Failure(f"torch.onnx.export failed: {type(e).__name__}: {line[0] if line else ''}")
    if train:  # which tensors torch trains, as the README's export for training lists them
        mark_parameters(model, path)
    proto = onnx.load(path)
    if opset == 18:
        proto = to_opset18(proto)
        onnx.save(proto, path)
    inits = {t.name for t in proto.graph.initializer}
    inputs = [i.name for i in proto.graph.input if i.name not in inits]
    return proto, inputs, [o.name for o in proto.graph.output]


def restore_initializers(proto, state, path):
    """Exporting in training mode runs the model once in train mode, which moves every BatchNorm's
    running statistics, and the ONNX file records the moved values. Writes the pre-export values
    (by PyTorch name) back, so that `of` starts where the PyTorch copy starts."""
    changed = 0
    for t in proto.graph.initializer:
        want = state.get(t.name)
        if want is None or tuple(want.shape) != tuple(t.dims) or not want.is_floating_point():
            continue
        have = numpy_helper.to_array(t)
        if not np.array_equal(have, want.numpy().astype(have.dtype)):
            t.CopyFrom(numpy_helper.from_array(want.numpy().astype(have.dtype), t.name))
            changed += 1
    if changed:
        onnx.save(proto, path)
    return changed


def nan_max(xs):
    """max(xs), but infinite when xs is empty or holds a NaN (max() skips a NaN that is not first)."""
    xs = list(xs)
    return math.inf if not xs or any(math.isnan(x) for x in xs) else max(xs)


def rel_err(got, want):
    """max|got - want| / max|want| (absolute when want is all zeros), and max|want|; infinite when
    the shapes differ (numpy would broadcast them) or any element is NaN (np.max propagates it).
    An infinity of want (a causal mask buffer's -inf) must be got exactly; the rest is compared."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    if got.shape != want.shape:
        return math.inf, float(np.max(np.abs(want))) if want.size else 0.0
    infinite = np.isinf(want)
    if infinite.any():
        if not np.array_equal(got[infinite], want[infinite]):
            return math.inf, math.inf
        got, want = got[~infinite], want[~infinite]
    err = float(np.max(np.abs(got - want))) if want.size else 0.0
    scale = float(np.max(np.abs(want))) if want.size else 0.0
    return (err / scale if scale > 0 else err), scale


# ---------------------------------------------------------------- checks

def calibrate_batch_norm(model, features):
    """Sets every BatchNorm's running statistics to the mean and variance its input has over
    `features`, as in a trained model. Untrained running statistics (0 and 1) shrink a deep
    network's output to ~1e-10, which any result would match within a relative tolerance."""
    bns = [mod for mod in model.modules() if isinstance(mod, nn.modules.batchnorm._BatchNorm)]
    if not bns:
        return
    saved = [(bn.momentum, bn.training) for bn in bns]
    for bn in bns:
        bn.reset_running_stats()
        bn.momentum = None  # a cumulative average over the batches below
        bn.train()
    with torch.no_grad():
        for i in range(0, len(features), BATCH):
            model(torch.from_numpy(features[i:i + BATCH]))
    for bn, (momentum, training) in zip(bns, saved):
        bn.momentum = momentum
        bn.train(training)


def check_infer(args, name, m, work):
    features, _, _ = make_data(m, work)
    calibrate_batch_norm(m.infer, features)
    model = m.infer.eval()
    x = torch.from_numpy(features[:BATCH])
    with torch.no_grad():
        want = model(x).numpy()
    path = os.path.join(work, "model.onnx")
    _, inputs, outputs = export(model, x, path, args.opset, train=False, written_out=m.written_out)
    if len(inputs) != 1 or len(outputs) != 1:
        raise Failure(f"the export has inputs {inputs} and outputs {outputs}, not one of each")
    plan = os.path.join(work, "p.ofp")
    tool(args, "ofc", path, "-o", plan)
    xpath, ypath = os.path.join(work, "x.npy"), os.path.join(work, "y.npy")
    np.save(xpath, features[:BATCH])
    tool(args, "ofrun", plan, "--input", f"{inputs[0]}={xpath}", "--output", f"{outputs[0]}={ypath}")
    got = np.load(ypath)
    if got.shape != want.shape:
        print(f"zoo {name} infer: FAIL: ofrun's output '{outputs[0]}' is {list(got.shape)}, "
              f"PyTorch's {list(want.shape)}")
        return 1
    rel, scale = rel_err(got, want)
    if not scale >= MIN_OUTPUT_SCALE:
        print(f"zoo {name} infer: FAIL: PyTorch's output is at most {scale:.3g}: a comparison with it would prove "
              "nothing (initialize the model so that it computes something)")
        return 1
    ok = bool(np.isfinite(rel)) and rel <= INFER_REL_TOL
    print(f"zoo {name} infer: {'ok' if ok else 'FAIL'}: output {list(want.shape)}, "
          f"max|of - torch| / max|torch| = {rel:.3g} (max|torch| {scale:.3g}, tolerance {INFER_REL_TOL:g})")
    if not ok:
        with np.printoptions(precision=6, suppress=True, linewidth=120, threshold=40, edgeitems=4):
            print(f"  of (flat, first values):    {got.reshape(-1)[:8]}\n"
                  f"  torch (flat, first values): {want.reshape(-1)[:8]}")
    return 0 if ok else 1


def of_losses(metrics):
    losses = {}
    with open(metrics) as f:
        for line in f:
            if line.strip():
                rec = json.loads(line)
                losses[int(rec["step"])] = float(rec["loss"])
    if sorted(losses) != list(range(1, STEPS + 1)):
        raise Failure(f"{metrics}: steps {sorted(losses)}, expected 1..{STEPS}")
    return [losses[s] for s in range(1, STEPS + 1)]


# The training loss's label smoothing and ignored label: the model under test's (one model a run;
# main sets them).
LABEL_SMOOTHING = 0.0
IGNORE_INDEX = -100
OWN_LOSS = False
SUMMED = False
NO_DECAY_1D = False
CLIP_NORM = 0.0
CLIP_VALUE = 0.0
SCHEDULE = None  # the model's (ofc --schedule, torch scheduler factory) at this check's rate
PARAM_LR = []  # the model's Model.param_lr
CHECK_LR = 0.0  # this check's optimizer lr


def param_groups(model):
    """What a training step's torch.optim optimizer takes: the model's parameters, or its param
    groups: with NO_DECAY_1D nanoGPT's configure_optimizers groups (tensors of 2+ dimensions
    decayed, the rest, biases and LayerNorm weights, with weight_decay 0), and with PARAM_LR a
    group per rate (its "lr" the check's times the multiple of the first glob that matches)."""
    if not NO_DECAY_1D and not PARAM_LR:
        return model.parameters()
    groups = {}
    for name, p in model.named_parameters():
        mult = next((m for glob, m in PARAM_LR if fnmatch.fnmatchcase(name, glob)), 1.0)
        groups.setdefault((mult, not (NO_DECAY_1D and p.dim() < 2)), []).append(p)
    out = []
    for (mult, decay), params in groups.items():
        group = {"params": params}
        if mult != 1.0:
            group["lr"] = CHECK_LR * mult
        if not decay:
            group["weight_decay"] = 0.0
        out.append(group)
    return out


def loss_of(model, x, y):
    """The loss a training step of `model` takes: its own (Model.own_loss) or its logits'
    cross-entropy."""
    return model(x, y) if OWN_LOSS else cross_entropy(model(x), y)


def cross_entropy(logits, labels):
    """F.cross_entropy with the labels [n, ...] of a batch shaped as the logits want them: [rows]
    for logits [rows, C] (a sequence model's flattened tokens), [n, d1, ...] for [n, C, d1, ...]."""
    return F.cross_entropy(logits, labels.reshape((-1,) + tuple(logits.shape[2:])), label_smoothing=LABEL_SMOOTHING,
                           ignore_index=IGNORE_INDEX)


def ddp_loss(model, x, y, parts):
    """The loss torch's DistributedDataParallel trains on `parts` ranks, computed in one process:
    each rank's rows (in order) go through the model alone, so BatchNorm normalizes each part with
    its own statistics; the gradient is the mean of the ranks' gradients (the mean of their
    losses, the parts being equal); and the running statistics are rank 0's (DDP broadcasts rank
    0's buffers before every forward), so the other parts' updates are undone: by the function
    returned, to call after the backward pass (which reads the buffers as they were). A summed
    loss (Model.summed) is the sum of the parts' sums: the whole batch's, as `of` trains it."""
    xs, ys = x.chunk(parts), y.chunk(parts)
    loss = loss_of(model, xs[0], ys[0])
    kept = [(b, b.detach().clone()) for b in model.buffers()]
    for xk, yk in zip(xs[1:], ys[1:]):
        loss = loss + loss_of(model, xk, yk)

    def restore():
        with torch.no_grad():
            for b, value in kept:
                b.copy_(value)
    return (loss if SUMMED else loss / parts), restore


def torch_train(model, make_opt, features, labels, dtype=torch.float32, parts=1):
    """STEPS steps over consecutive batches, as `ofrun --no-shuffle` takes them, on `parts`
    data-parallel ranks; their losses."""
    return list(torch_steps(model, make_opt, features, labels, dtype, parts))


def torch_steps(model, make_opt, features, labels, dtype=torch.float32, parts=1):
    """torch_train step by step: yields each step's loss once `model` holds the weights after it."""
    opt = make_opt(param_groups(model))
    sched = SCHEDULE[1](opt) if SCHEDULE else None
    for s in range(STEPS):
        x = torch.from_numpy(features[s * BATCH:(s + 1) * BATCH])
        x = x.to(dtype) if x.is_floating_point() else x  # token ids stay integers
        y = torch.from_numpy(labels[s * BATCH:(s + 1) * BATCH])
        loss, restore = ddp_loss(model, x, y, parts) if parts > 1 else (loss_of(model, x, y), lambda: None)
        opt.zero_grad()
        loss.backward()
        restore()
        if CLIP_NORM:
            torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP_NORM)
        if CLIP_VALUE:
            torch.nn.utils.clip_grad_value_(model.parameters(), CLIP_VALUE)
        opt.step()
        if sched is not None:
            sched.step()
        yield loss.item()


def jiggled(model, seed):
    """`model`, each float parameter and buffer moved by about one float32 rounding."""
    gen = torch.Generator().manual_seed(1000 + seed)
    with torch.no_grad():
        for t in list(model.parameters()) + list(model.buffers()):
            if t.is_floating_point():
                t.mul_((1 + 2.0 ** -24 * torch.randn(t.shape, generator=gen, dtype=torch.float64)).to(t.dtype))
    return model


def jiggled_array(features, seed):
    """Features moved by about one float32 rounding (token ids stay as they are)."""
    if not np.issubdtype(features.dtype, np.floating):
        return features
    rng = np.random.default_rng(2000 + seed)
    return (features * (1 + 2.0 ** -24 * rng.standard_normal(features.shape))).astype(features.dtype)


def kinks_of(mod):
    """The kinks of a torch.nn activation module (none for any other module)."""
    return KINKS.get(type(mod).__name__, ()) if type(mod).__module__.startswith("torch.nn") else ()


def train_recording_kinks(model, steps):
    """Runs `steps` (torch_steps over `model`) to the end; returns the losses and, of the first
    step, the input of every call of a kinked activation: {(module name, call): float64 tensor}."""
    seen, hooks = {}, []
    for name, mod in model.named_modules():
        if kinks_of(mod):
            def record(mod, inp, name=name):
                seen[(name, sum(1 for key in seen if key[0] == name))] = inp[0].detach().double().clone()
            hooks.append(mod.register_forward_pre_hook(record))
    try:
        first = next(steps)
    finally:
        for h in hooks:
            h.remove()
    return [first] + list(steps), seen


def kink_flipped(model, where, index, kink):
    """`model` (float64) in which element `index` of the input of activation call `where` =
    (module name, call) of the first step is mirrored across `kink`: the same distance from it,
    on its other side."""
    name, call = where
    calls = [0]

    def mirror(mod, inp):
        calls[0] += 1
        if calls[0] - 1 != call:
            return None
        x = inp[0]
        delta = torch.zeros_like(x)
        delta.view(-1)[index] = 2 * (kink - x.detach().reshape(-1)[index])
        return (x + delta,)
    dict(model.named_modules())[name].register_forward_pre_hook(mirror)
    return model



def checkpoint_weights(ck):
    """ck/latest is a file naming the newest step folder (or, should it become one, that folder)."""
    latest = os.path.join(ck, "latest")
    if os.path.isdir(latest):
        return os.path.join(latest, "model.safetensors")
    with open(latest) as f:
        return os.path.join(ck, f.read().strip(), "model.safetensors")


def add_aliases(tensors, model):
    """A tied parameter (a head sharing the embedding's weight) is one tensor under two state_dict
    names; a checkpoint stores it once. Adds the missing name(s) of each such tensor."""
    groups = {}
    for k, v in model.state_dict().items():
        if v.numel():
            groups.setdefault((v.data_ptr(), tuple(v.shape), v.dtype), []).append(k)
    for names in groups.values():
        have = [k for k in names if k in tensors]
        for k in names:
            if have and k not in tensors:
                tensors[k] = tensors[have[0]]
    return tensors


def referee_runs(name, check, ref, make_opt, features, labels, parts):
    """Trains `ref` (float32), a float64 copy and the referee runs of an ill-conditioned model
    (Model.float64_referee): `ref` itself, NOISE_RUNS jiggled float32 copies, and up to KINK_RUNS
    float64 copies each with one uncertain kink on its other side (every float32 run, `of`'s
    included, may land either way there). Returns (float64 model, its losses), [(model, losses)]
    of the referees, and `ref`'s losses."""
    exact = copy.deepcopy(ref).double()
    start64 = copy.deepcopy(exact)
    runs = [(ref, features)] + [(jiggled(copy.deepcopy(ref), seed), jiggled_array(features, seed)) for seed in range(NOISE_RUNS)]
    referees, inputs32 = [], []
    for model, feats in runs:
        losses, seen = train_recording_kinks(model, torch_steps(model, make_opt, feats, labels, parts=parts))
        referees.append((model, losses))
        inputs32.append(seen)
    losses64, inputs64 = train_recording_kinks(exact, torch_steps(exact, make_opt, features, labels, torch.float64, parts))
    modules = dict(ref.named_modules())
    kinks = []
    for key, e in inputs64.items():
        spread = max((seen[key] - e).abs().max().item() for seen in inputs32)
        for kink in kinks_of(modules[key[0]]):
            d = (e.reshape(-1) - kink).abs()
            kinks += [(d[i].item() / spread, key, i, kink) for i in torch.nonzero(d < spread).reshape(-1).tolist()]
    kinks.sort()
    for _, key, i, kink in kinks[:KINK_RUNS]:
        model = kink_flipped(copy.deepcopy(start64), key, i, kink)
        referees.append((model, torch_train(model, make_opt, features, labels, torch.float64, parts)))
    flipped = ", ".join(f"{k[0]}#{k[1]}[{i}]" for _, k, i, _ in kinks[:KINK_RUNS])
    print(f"zoo {name} {check}: referee runs: PyTorch float32, {NOISE_RUNS} jiggled float32 copies, "
          f"{min(len(kinks), KINK_RUNS)} float64 runs with a kink flipped"
          + (f" (of {len(kinks)} activation inputs nearer a kink than float32's spread: {flipped})" if kinks else ""))
    return (exact, losses64), referees, referees[0][1]


def clone(model):
    """copy.deepcopy, for models with nn.utils.weight_norm too: the weight it computes from
    weight_g and weight_v before each forward is a non-leaf tensor, which deepcopy refuses; it is
    dropped from the model first (the next forward computes it again)."""
    from torch.nn.utils.weight_norm import WeightNorm
    for module in model.modules():
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, WeightNorm) and hook.name in module.__dict__:
                delattr(module, hook.name)
    return copy.deepcopy(model)


def check_train(args, name, m, work, check):
    parts = DP if check.startswith(("dp2-", "zero3-")) else 1
    zero = ["--zero", "3"] if check.startswith("zero3-") else []
    tp = ["--devices", "2:cpu", "--tp", "2"] if check.startswith("tp2-") else []
    optimizer, make_opt, lr = optimizers(m.lr_scale, m.weight_decay)["train-" + check.split("-", 1)[1]]
    global SCHEDULE, PARAM_LR, CHECK_LR
    SCHEDULE = m.schedule(lr) if m.schedule else None
    PARAM_LR, CHECK_LR = m.param_lr, lr
    model = m.train.train()
    # Copies before the export: it runs the model once in train mode (moving BatchNorm statistics).
    ref, fresh = clone(model), clone(model)
    features, labels, data = make_data(m, work)
    path = os.path.join(work, "model.onnx")
    x0 = torch.from_numpy(features[:BATCH])
    if m.own_loss:  # named as its forward's arguments: --label finds the labels
        proto, _, _ = export(model, (x0, torch.from_numpy(labels[:BATCH])), path, args.opset, train=True,
                             input_names=["input", "label"])
    else:
        proto, _, _ = export(model, x0, path, args.opset, train=True)
    restore_initializers(proto, ref.state_dict(), path)
    plan = os.path.join(work, "t.ofp")
    options = ([f"label_smoothing={m.label_smoothing}"] if m.label_smoothing else []) + \
        ([f"ignore_index={m.ignore_index}"] if m.ignore_index is not None else [])
    loss = "output" if m.own_loss else "cross_entropy" + (":" + ",".join(options) if options else "")
    tool(args, "ofc", path, "-o", plan, "--train", "--loss", loss, "--label", "label",
         "--optimizer", optimizer, *(["--devices", f"{parts}:cpu", "--dp", parts] if parts > 1 else []), *zero, *tp,
         *(["--no-weight-decay-1d"] if m.no_decay_1d else []),
         *(["--clip-grad-norm", m.clip_norm] if m.clip_norm else []),
         *(["--clip-grad-value", m.clip_value] if m.clip_value else []),
         *(["--schedule", SCHEDULE[0]] if SCHEDULE else []),
         *[a for glob, mult in m.param_lr for a in ("--param-lr", f"{glob}={lr * mult!r}")])
    metrics, ck = os.path.join(work, "m.jsonl"), os.path.join(work, "ck")
    tool(args, "ofrun", plan, "--data", data, "--steps", STEPS, "--no-shuffle", "--metrics", metrics,
         "--checkpoint", ck)
    got = of_losses(metrics)
    exact, referees = None, []
    if m.float64_referee:
        exact, referees, want = referee_runs(name, check, ref, make_opt, features, labels, parts)
    else:
        want = torch_train(ref, make_opt, features, labels, parts=parts)

    rel = [abs(g - w) / abs(w) if w != 0 else abs(g) for g, w in zip(got, want)]
    losses_ok = all(r <= LOSS_REL_TOL for r in rel)  # also false for a NaN
    if exact is not None:
        # Ill-conditioned models: `of` and the referee runs are judged by their distance from float64.
        want64 = exact[1]
        ours = [abs(g - e) / abs(e) for g, e in zip(got, want64)]
        theirs = [max(abs(w - e) / abs(e) for w in ws) for e, *ws in zip(want64, *(r[1] for r in referees))]
        # Over the whole run: a diverging step amplifies whichever rounding came before it.
        losses_ok = nan_max(ours) <= max(LOSS_REL_TOL, REFEREE_FACTOR * nan_max(theirs))
        print(f"zoo {name} {check}: losses vs float64 PyTorch: of {nan_max(ours):.3g}, the farthest of "
              f"{len(referees)} referee runs {nan_max(theirs):.3g} (of within {REFEREE_FACTOR:g}x, or {LOSS_REL_TOL:g})")
    print(f"zoo {name} {check}: losses {'ok' if losses_ok else 'FAIL'}: {STEPS} steps, "
          f"{want[0]:.6f} -> {want[-1]:.6f}, max relative difference {nan_max(rel):.3g} "
          f"(tolerance {LOSS_REL_TOL:g})")
    if not losses_ok:
        print(f"  {'step':>4} {'of':>14} {'torch':>14} {'rel. diff':>10}")
        for s, (g, w, r) in enumerate(zip(got, want, rel), 1):
            print(f"  {s:>4} {g:>14.9f} {w:>14.9f} {r:>10.3g}" + ("" if r <= LOSS_REL_TOL else "  <--"))

    weights = checkpoint_weights(ck)
    try:
        tensors, _ = read_safetensors(weights)
    except Exception as e:  # torch_load_checkpoint.FormatError, OSError
        raise Failure(f"{weights}: {e}")
    tensors = add_aliases(tensors, fresh)
    try:
        fresh.load_state_dict(tensors, strict=True)
    except RuntimeError as e:  # missing / unexpected keys, wrong shapes: `of`'s checkpoint is wrong
        print(f"zoo {name} {check}: weights FAIL: load_state_dict(strict=True) of "
              f"{os.path.relpath(weights, work)} refused it:")
        print("  " + str(e).strip().replace("\n", "\n  "))
        return 1
    bad, worst, state = [], 0.0, ref.state_dict()
    state64 = exact[0].state_dict() if exact is not None else None
    for k, w in state.items():
        g = tensors[k]
        if state64 is not None and w.is_floating_point():
            e = state64[k]
            # Tensors near zero (a bias whose exact gradient is 0 and moves by rounding alone)
            # are compared at float32's noise floor, 1e-6 absolute.
            scale = max(e.abs().max().item(), WEIGHT_FLOOR / WEIGHT_REL_TOL)
            ours = (g.double() - e).abs().max().item() / scale
            theirs = max((r[0].state_dict()[k].double() - e).abs().max().item() / scale for r in referees)
            worst = nan_max([worst, ours])
            if not ours <= max(WEIGHT_REL_TOL, REFEREE_FACTOR * theirs):
                bad.append((k + f" (vs float64; referee runs at most {theirs:.3g} off)", ours, scale, g, e.float()))
            continue
        if k in m.zero_grad and check.endswith(("-adamw", "-rmsprop", "-adagrad", "-amsgrad")):
            sl = m.zero_grad[k]
            noise = (g[sl].double() - w[sl].double()).abs().max().item()
            g, w = g.clone(), w.clone()
            if noise > ADAM_NOISE_ABS_TOL * max(1.0, lr / (1e-3 * m.lr_scale)):
                bad.append((k + f"[{sl.start}:{sl.stop}] (zero gradient)", noise, None, g, w))
            g[sl], w[sl] = 0, 0  # the rest of the tensor is compared as usual
        if w.is_floating_point():
            r, scale = rel_err(g.double().numpy(), w.double().numpy())
            ok = bool(np.isfinite(r)) and r <= WEIGHT_REL_TOL
            worst = max(worst, r) if np.isfinite(r) else float("inf")
        else:  # num_batches_tracked, masks: counts and flags are exact
            ok = torch.equal(g.to(w.dtype), w)
            r, scale = (0.0 if ok else float("inf")), None
        if not ok:
            bad.append((k, r, scale, g, w))
    # A padding row (nn.Embedding's padding_idx) gets no gradient on either side: it must stay as
    # torch's does, not merely within the tolerance above (a small gradient moves it little).
    for line in padding_rows(ref):
        k, row = line.rsplit(" ", 1)
        g, w = tensors[k][int(row)].double(), state[k][int(row)].double()
        if not torch.allclose(g, w, rtol=0, atol=1e-7):
            bad.append((k + f"[{row}] (padding row)", (g - w).abs().max().item(), None, g, w))
    print(f"zoo {name} {check}: weights {'ok' if not bad else 'FAIL'}: {len(state)} tensors of "
          f"{os.path.relpath(weights, work)} vs PyTorch after {STEPS} steps, worst relative "
          f"difference {worst:.3g} (tolerance {WEIGHT_REL_TOL:g} of each tensor's max |value|)"
          + (f"; {len(bad)} differ" if bad else ""))
    with np.printoptions(precision=6, suppress=True, linewidth=120, threshold=20, edgeitems=3):
        for k, r, scale, g, w in bad[:12]:
            what = f"relative {r:.3g} of max|torch| {scale:.3g}" if scale is not None else "not equal"
            print(f"  {k} {list(w.shape)}: {what}\n    of:    {g.reshape(-1)[:6].numpy()}\n"
                  f"    torch: {w.reshape(-1)[:6].numpy()}")
        if len(bad) > 12:
            print(f"  ... and {len(bad) - 12} more")
    eval_ok = check_eval(args, name, check, plan, data, ck, ref, features, labels, exact, referees) if parts == 1 else True
    return 0 if losses_ok and not bad and eval_ok else 1


EVAL_LINE = re.compile(r"^ofrun: eval (\d+) samples, loss ([0-9.eE+-]+), accuracy ([0-9.]+)%$", re.M)
EVAL_LOSS_LINE = re.compile(r"^ofrun: eval (\d+) samples, loss ([0-9.eE+-]+)$", re.M)


def check_eval(args, name, check, plan, data, ck, model, features, labels, exact, referees):
    """`ofrun --eval` of the trained checkpoint on the training file against the trained PyTorch
    model in eval mode: the mean cross-entropy over every label (each of a sequence's tokens,
    each of an image's pixels) and the percentage of them predicted. An ill-conditioned model
    (Model.float64_referee) is judged against float64 PyTorch, as its losses are."""
    out = tool(args, "ofrun", plan, "--eval", "--data", data, "--checkpoint", ck)
    if OWN_LOSS:
        return check_eval_own_loss(name, check, out, model, features, labels, exact, referees)
    got = EVAL_LINE.search(out)
    if not got:
        raise Failure(f"ofrun --eval printed no eval line: {out.strip()[-200:]}")
    of_loss, of_acc = float(got.group(2)), float(got.group(3))
    count = int((labels != IGNORE_INDEX).sum())
    # ofrun prints 6 decimals of the loss and 2 of the percentage; a near-tie may flip one label.
    loss_rel, acc_tol = LOSS_REL_TOL, 0.005 + 100.0 / count
    loss, acc = torch_eval(exact[0] if exact is not None else model, features, labels)
    if exact is not None:
        spread = [torch_eval(r[0], features, labels) for r in referees]
        loss_rel = max(loss_rel, REFEREE_FACTOR * max(abs(l - loss) / abs(loss) for l, _ in spread))
        acc_tol = max(acc_tol, max(abs(a - acc) for _, a in spread))
    ok = (int(got.group(1)) == len(features) and abs(of_loss - loss) <= loss_rel * abs(loss) + 5e-7
          and abs(of_acc - acc) <= acc_tol)
    print(f"zoo {name} {check}: eval {'ok' if ok else 'FAIL'}: {got.group(1)} samples ({count} labels), "
          f"of loss {of_loss:.6f} accuracy {of_acc:.2f}%, PyTorch{' float64' if exact is not None else ''} "
          f"{loss:.6f} {acc:.2f}% (loss within {loss_rel:.3g} relative)")
    return ok


def check_eval_own_loss(name, check, out, model, features, labels, exact, referees):
    """A model returning its own loss: `ofrun --eval` averages it over the whole batches of the
    file (a mean cannot leave out a last batch's padding), as PyTorch does here in eval mode."""
    got = EVAL_LOSS_LINE.search(out)
    if not got:
        raise Failure(f"ofrun --eval printed no loss line: {out.strip()[-200:]}")
    of_loss = float(got.group(2))

    def mean_loss(net):
        net.eval()
        with torch.no_grad():
            dtype = next(net.parameters()).dtype
            losses = [loss_of(net, torch.from_numpy(features[s:s + BATCH]).to(dtype), torch.from_numpy(labels[s:s + BATCH])).item()
                      for s in range(0, len(features) - BATCH + 1, BATCH)]
        net.train()
        return sum(losses) / len(losses)
    loss, loss_rel = mean_loss(exact[0] if exact is not None else model), LOSS_REL_TOL
    if exact is not None:
        loss_rel = max(loss_rel, REFEREE_FACTOR * max(abs(mean_loss(r[0]) - loss) / abs(loss) for r in referees))
    samples = len(features) // BATCH * BATCH
    ok = int(got.group(1)) == samples and abs(of_loss - loss) <= loss_rel * abs(loss) + 5e-7
    print(f"zoo {name} {check}: eval {'ok' if ok else 'FAIL'}: {got.group(1)} samples, of loss {of_loss:.6f}, "
          f"PyTorch{' float64' if exact is not None else ''} {loss:.6f} (within {loss_rel:.3g} relative)")
    return ok


def torch_eval(model, features, labels):
    """PyTorch's mean cross-entropy over every label of the file and the percentage predicted, in
    eval mode, batch by batch."""
    dtype = next(model.parameters()).dtype
    model.eval()
    nll, hits, count = 0.0, 0, 0
    with torch.no_grad():
        for s in range(0, len(features), BATCH):
            x = torch.from_numpy(features[s:s + BATCH])
            logits = model(x.to(dtype) if x.is_floating_point() else x).double()
            y = torch.from_numpy(labels[s:s + BATCH]).reshape((-1,) + tuple(logits.shape[2:]))
            nll += F.cross_entropy(logits, y, reduction="sum", ignore_index=IGNORE_INDEX).item()
            hits += (logits.argmax(1) == y).sum().item()
            count += (y != IGNORE_INDEX).sum().item()
    model.train()
    return nll / count, 100.0 * hits / count


def main(args):
    args.bin, args.work = os.path.abspath(args.bin), os.path.abspath(args.work)
    for t in ("ofc", "ofrun"):
        if not os.access(os.path.join(args.bin, t), os.X_OK):
            print(f"zoo: no executable {t} in {args.bin}", file=sys.stderr)
            return 2
    torch.set_num_threads(1)
    work = os.path.join(args.work, f"{args.model}-{args.check}")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    start = time.monotonic()
    try:
        m = build(args.model)
        global LABEL_SMOOTHING, IGNORE_INDEX, OWN_LOSS, SUMMED, NO_DECAY_1D, CLIP_NORM, CLIP_VALUE
        OWN_LOSS, SUMMED, NO_DECAY_1D, CLIP_NORM, CLIP_VALUE = m.own_loss, m.summed, m.no_decay_1d, m.clip_norm, m.clip_value
        LABEL_SMOOTHING = m.label_smoothing
        IGNORE_INDEX = m.ignore_index if m.ignore_index is not None else -100
        if args.check == "infer" and m.own_loss:
            raise Failure(f"{args.model} returns its own loss: it has training checks only")
        if args.check == "infer":
            rc = check_infer(args, args.model, m, work)
        else:
            rc = check_train(args, args.model, m, work, args.check)
    except CannotRun as e:
        print(f"zoo {args.model} {args.check}: FAIL: cannot run: {e} (scripts/setup.sh installs it)")
        return CANNOT_RUN
    except (Failure, OSError, ValueError, KeyError) as e:
        print(f"zoo {args.model} {args.check}: {e}", file=sys.stderr)
        return 2
    print(f"zoo {args.model} {args.check}: {'pass' if rc == 0 else 'MISMATCH'} "
          f"({time.monotonic() - start:.1f} s)")
    return rc


if __name__ == "__main__":
    sys.exit(main(ARGS))
