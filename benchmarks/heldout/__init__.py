"""A held-out suite: programs in the styles of public model code that the model was never fitted to.

**These programs are never used to choose or fit any rate, ceiling or constant of the model.**
They exist only to score it: ``python benchmarks/prediction.py --suite heldout`` measures them
through the project (``benchmarks/heldout/heldout.toml``) and compares each program's and each
kernel's predicted time with its measured one. Anyone changing the model must not tune it
against these programs; a new program added to tune a rate belongs elsewhere, not here.

Each module has ``setup(**dims) -> (fn, args)``: the function and its example arguments
(arrays or pytrees), the form ``[[workload]] setup = "module:function"`` in a config and
``roofline_report.analyze(fn, *args)`` both take. The sizes make each program run for
roughly 0.5 to 20 ms per call on a 2-core CPU and compile in a few seconds; on a GPU or TPU
each runs at its ``backend_dims`` (heldout.toml), sizes at which a call takes a millisecond or
more on a TPU v5e.

=====================  ==========================================================  ===============
module                 program                                                     library
=====================  ==========================================================  ===============
mixer_step             MLP-Mixer block, classifier head, AdamW training step       Flax NNX, optax
gru_scan               GRU over a sequence through ``lax.scan``, loss and gradient  Equinox
resnet_bn_step         ResNet basic block with batch norm, SGD training step       Flax NNX, optax
vit_patch_embed        ViT patch embedding (strided conv), class token, positions  Flax NNX
embedding_grad         embedding lookup and its scatter-add gradient               jax
causal_attention_bf16  causal multi-head attention in bfloat16                     jax
moe_topk               top-k mixture-of-experts routing with gather and scatter    jax
layernorm_backward     layer norm's backward pass (dx, dgamma, dbeta)              jax
remat_block            residual MLP blocks under ``jax.checkpoint``, gradient      Equinox
int_hashing            integer hashing, Bloom-filter masks, argmax and compares    jax
graph_net              graph network message passing with segment sums (jraph)     jax
lstm_stack             two stacked LSTM layers through ``lax.scan`` (flax linen)    jax
sample_until_eos       top-k sampling in a while loop that stops on end-of-sequence jax
fnet_fourier           F-Net encoder blocks, FFT token mixing (google-research)    jax
int8_mlp               int8 quantized MLP inference, ``s8 × s8 → s32`` (AQT)        jax
mbconv_depthwise       inverted residual blocks, depthwise convolutions             jax
vae_up_decoder         VAE decoder up block, group norms, upsampling (diffusers)   jax
t5_relative_attention  T5 encoder layers with a bucketed relative position bias    jax
wav2vec2_features      wav2vec 2.0 feature encoder, strided and grouped 1-D convs  jax
s5_scan                S5 state-space layers, complex ``lax.associative_scan``     jax
perceiver_encoder      Perceiver latents cross-attending to a long input array     jax
llama_decoder          LLaMA decoder: RMSNorm, complex rotary embedding, SwiGLU    jax
mamba_selective_scan   Mamba blocks, causal depthwise conv, selective scan         jax
swin_shifted_window    Swin blocks, shifted-window attention, relative bias        jax
nerf_render_grad       NeRF MLP, volume rendering, CDF resampling, gradient        jax
gemma_kv_decode        Gemma decoding one token against a donated key-value cache  jax
whisper_log_mel        Whisper's log-Mel front end: gathered frames, Hann, rfft    jax
dlrm_small_step        DLRM-Small SGD step, embedding rows' scatter-add gradient   jax
mnist_mlp_step         plain MLP SGD step, weight gradients ``x.T @ dy``           jax
convnext_stage_step    ConvNeXt stage: 7x7 depthwise convolutions, SGD step        jax
dcgan_step             DCGAN iteration: transposed convolutions, two Adam steps    jax
=====================  ==========================================================  ===============

The last twenty-one are reimplementations of real open-source models at small sizes: each module's
docstring names the repository, the file and the commit it was written from (``CITED``). No
code is copied; the sizes make each call run in well under a second on a 2-core CPU. Gemma,
Whisper, DLRM and the MLP step are of the kinds of kernel a CPU runs below its streaming roofs
that the suite lacked: a cache re-laid out each step and matrix-vector products (Gemma), a real
FFT of framed audio (Whisper), the scatter-add of an embedding table's rows (DLRM), dots with a
transposed operand (the MLP step).

The modules import nothing from each other or from the project, so a config can load them
as top-level modules from this folder.
"""

PROGRAMS: tuple[str, ...] = (
    "mixer_step",
    "gru_scan",
    "resnet_bn_step",
    "vit_patch_embed",
    "embedding_grad",
    "causal_attention_bf16",
    "moe_topk",
    "layernorm_backward",
    "remat_block",
    "int_hashing",
    "graph_net",
    "lstm_stack",
    "sample_until_eos",
    "fnet_fourier",
    "int8_mlp",
    "mbconv_depthwise",
    "vae_up_decoder",
    "t5_relative_attention",
    "wav2vec2_features",
    "s5_scan",
    "perceiver_encoder",
    "llama_decoder",
    "mamba_selective_scan",
    "swin_shifted_window",
    "nerf_render_grad",
    "gemma_kv_decode",
    "whisper_log_mel",
    "dlrm_small_step",
    "mnist_mlp_step",
    "convnext_stage_step",
    "dcgan_step",
)

CITED: tuple[str, ...] = PROGRAMS[10:]
"""The programs reimplemented from a cited open-source model (repository, file and commit)."""

BLIND: tuple[str, ...] = (PROGRAMS[21], *PROGRAMS[23:25])
"""The programs no model change has been made from: LLaMA, Swin and NeRF, added after the round
before the one whose rules Gemma, Whisper, DLRM and the MLP step brought. NeRF's positional
encodings were looked at later (their sines run slower than the sine roof's fixed point and
faster than on random arguments), but no rule came of it. The five before LLaMA
(``PROGRAMS[16:21]``) were the blind set of an earlier round; their misses informed that
round's changes, so they are no longer blind. Mamba (``PROGRAMS[22]``) was blind until its
broadcast transposes were among those the roofs by rows were made from; the four after NeRF
(``PROGRAMS[25:29]``) came with the changes whose rules they exercise (matrix-vector
products, transposed dots, block transposes, real FFTs, row scatters, arguments read from
main memory); the ConvNeXt stage and the DCGAN iteration (``PROGRAMS[29:]``) joined blind,
but their misses led to the grouped convolutions priced at every tap and to the roof of the
convolutions no library takes. None of those is blind."""
