"""The model's description, as the report states it for each kind of backend (pure text)."""

from __future__ import annotations

from roofline_report.analysis.fresh_pages import COUNTED_PAGES, FRESH_ABOVE_BYTES

__all__ = ["ACCELERATOR_MODEL_TEXT", "MODEL_TEXT"]

_JUDGED = (
    "The binding is the prediction's "
    "largest term and the miss the predicted time against the measured one (the model's "
    "accuracy); a prediction off by a factor of two or more either way, or a program above "
    "its prediction, gets the likeliest reason from the evidence. Apart from the model, the "
    "hardware roof at a program's intensity is its kernels' work at the peak of each roof "
    "it runs under summed against their bytes at the roofs of their memory levels summed, "
    "whichever takes longer: the achieved rate ÷ that roof is the program's share of it, "
    "its headroom.")

MODEL_TEXT = (
    "The predicted time is the model of the compiled program, kernel by kernel: Σ over its "
    "kernels of trips × (max(compute, memory, pattern) + launch) + the dispatch floor of one "
    "call "
    "(trips: a loop's trip count, or for a loop that stops on data the launches per call its "
    "trace observed; untraced, such a loop counts once and the prediction is a lower bound), "
    "where a kernel's launch is the launch floor, plus the split-launch floor once per call for "
    "a kernel the compiler splits across worker threads (measured with the calls enqueued, as "
    "programs are timed; a loop's later trips find the workers awake), and, in a CPU program "
    f"whose timing counted page faults (at least {COUNTED_PAGES} a call: the C allocator "
    "serves buffers with new pages or not by what the process allocated and freed before) or, "
    "uncounted, whose "
    "temporary buffers reach "
    f"{FRESH_ABOVE_BYTES >> 20} MiB (past which glibc maps them afresh on every call), a page "
    "fault for each fresh page its writes reach first "
    "(the kernels' fresh writes in program order until they cover the counted pages or the "
    "temporaries); a "
    "kernel's compute charges matrix-product flops to the matmul roof of its dtype at the "
    "flops of one product (an integer product to its integer type's matmul roof), grouped "
    "(depthwise) convolution flops to the grouped-convolution roof read at their multiply-adds "
    "per output (window × input features per group), dense 1-D (a sequence's) convolution "
    "flops to the 1-D convolution roof read at their filter's size (window × input × output "
    "features), other "
    "convolution flops (patch embeddings' among them) to the convolution roof, conversions "
    "to the conversion "
    "rate, other flops to the measured multiply-add rate and each transcendental to its "
    "function's rate (with the work a loop fusion repeats for every output element, under a "
    "broadcast along the output's minor axis, that the count charges once per element of its "
    "own shape, and the real arithmetic of complex ops: a complex multiply is six flops), its "
    "memory time is the bytes it touches at the bandwidth of the "
    "memory level that holds them (a kernel touching at least the last-level cache's "
    "capacity that writes a fresh output no faster than main memory's read-write roof; a "
    "reduction at the row reduction's rate in its dtype, its adds and the widening of its "
    "elements included), and a kernel of a pattern that runs below the streaming "
    "roofs (a transposing copy, one fused with a broadcast, a reduction keeping an axis "
    "between two it reduces, a gather, a scatter, a sort, a top-k, an argmax, an FFT, a "
    "dot outside the matmul library, complex dots at a complex64 rate of their own) takes its "
    "size at that pattern's rate measured at its size; a kernel that reads its input in "
    "several passes (a fused softmax or layer norm) over bytes at least the last-level "
    "cache's capacity takes its compute, memory and pattern terms one after another, not the "
    "largest of them, each pass streaming its input from main memory again. " + _JUDGED)

#: The model as it runs on an accelerator (a GPU or TPU): what differs from a CPU's is said.
ACCELERATOR_MODEL_TEXT = (
    "The predicted time is the model of the compiled program, kernel by kernel. The device "
    "runs one call while the host dispatches the next, so a call takes the longer of the "
    "two: Σ over its kernels of trips × (max(compute, memory, pattern) + launch), or the "
    "host's dispatch of a call (timed on the program's own arguments and results where the "
    "run did, else the dispatch floor at the buffers the call passes); an asynchronous copy "
    "is charged its issue alone, its transfer overlapping the kernels issued between its "
    "start and its done (trips: a loop's trip count, read from its condition and body where "
    "the compiler writes none, or for a loop that stops on data the launches per call its "
    "trace observed; untraced, such a loop counts once and the prediction is a lower "
    "bound). A kernel's compute charges matrix-product flops (a TPU writes every product as "
    "a convolution) to the matmul roof of its dtype at its precision (jax's default runs "
    "float32 products in one bfloat16 pass on a TPU, the highest precision in several) and "
    "an integer product to its integer type's roof, convolution flops to the convolution "
    "roof (grouped ones to the grouped-convolution roof), other flops to the measured "
    "multiply-add rate and each transcendental to its function's rate; its memory time is "
    "the larger of its HBM bytes at the HBM roof (the read stream's for a kernel that mostly "
    "reads) and its bytes in the core's own memory at the measured on-chip rate; and a "
    "kernel of a pattern with a rate of its own (a sort or a top-k by row length, a gather "
    "or a scatter by the elements of each index, a reduction broadcast back along its row as "
    "a reduce-window spanning the row, a reduction along a non-minor axis, an argmax, a TPU's "
    "in-place update of part of each tile it crosses by those tiles) takes its size at that "
    "pattern's rate measured at its size. " + _JUDGED)
