"""What an answer for a TensorFlow CPU profile must say about oneDNN, in words (`core.profiles`).

Each note quotes measured figures (data/REFERENCE.md); `core.profiles.MachineProfile`
picks the one an answer at a precision needs.
"""

from __future__ import annotations

# What an answer for a profile whose runs had oneDNN off must add: TensorFlow's own
# default turned it off there (`core.machine.ONEDNN_DEFAULT_FLAGS`), one variable turns it
# on, and the peaks differ by that much (data/REFERENCE.md, the knob design measured
# both ways on one AVX2-only EPYC: `memplan machines --compare`).
ONEDNN_OFF_NOTE = (
    "On this profile TensorFlow runs without oneDNN, its default on CPUs without AVX-512 "
    "VNNI or BF16, AVX-VNNI or AMX. TF_ENABLE_ONEDNN_OPTS=1 in the training job's "
    "environment turns it on: on an AVX2-only AMD EPYC that lowered the peak of each of "
    "the 36 float32 configurations measured both ways, by a median 1.72x and up to 2.50x "
    "(data/REFERENCE.md). Size for the setting the job will run with."
)
# Instruction-set levels (`core.cpu_names.ISA_LEVELS`) whose CPUs all have AVX-512F, with which
# TensorFlow's oneDNN runs bfloat16 (`core.machine.onednn_takes`). Below them only
# AVX-NE-CONVERT lets it, a flag the levels do not record; float16 needs AVX-512 FP16.
HALF_ONEDNN_LEVELS = frozenset({"amx", "avx512_bf16", "avx512"})
# What an answer at a half precision must add for a CPU below AVX-512: oneDNN does not
# run it there, on or off (data/REFERENCE.md, mixed_bfloat16 measured both ways on
# one AVX2-only EPYC).
HALF_WITHOUT_ONEDNN = (
    "TensorFlow runs {precision} on oneDNN only on CPUs with AVX-512 or AVX-NE-CONVERT; "
    "elsewhere it runs TensorFlow's own kernels whatever TF_ENABLE_ONEDNN_OPTS says. On an "
    "AVX2-only AMD EPYC, mixed_bfloat16 with TF_ENABLE_ONEDNN_OPTS=1 peaked 0.94-0.99x "
    "the same runs without it (48^3: 1.25 and 1.86 GiB at batch 1 and 2, against 1.26 "
    "and 1.89), and above float32 with oneDNN (1.05 and 1.23 GiB)."
)
HALF_ON_ONEDNN_PROFILE = (
    " This profile's runs had oneDNN, so its models describe float32 on oneDNN: for "
    "{precision} on this machine ask profile {off_key}, the same machine without oneDNN."
)
