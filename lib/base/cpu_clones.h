// Element loops built twice: for baseline x86-64 (SSE2) and for AVX2. The dynamic
// loader picks the clone the CPU runs (an ifunc resolved once), so one binary serves
// every x86-64 machine and uses vectors twice as wide where it can. Results are the
// same element for element: the loops are element-wise, and AVX2 alone (no FMA) gives
// the compiler no contraction to make. `flatten` inlines every call the function makes
// into each clone: a loop left in a helper would be built for the baseline only.
#pragma once

#if defined(__x86_64__) && defined(__has_attribute)
#if __has_attribute(target_clones) && defined(__ELF__)
#define HVD_CPU_CLONES __attribute__((target_clones("avx2", "default"), flatten))
#endif
#endif

#ifndef HVD_CPU_CLONES
#define HVD_CPU_CLONES
#endif
