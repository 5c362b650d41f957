// Kernels built for more than one x86 instruction set, the best one the CPU has chosen once,
// when the program loads. A macro below in front of a function compiles it once per listed
// set, and the dynamic loader runs GCC's resolver for it once (function multiversioning, an
// ifunc). One binary is then fast on an AVX-512 Xeon or EPYC and on an AVX2-only EPYC alike,
// where a -march build would be fast on one and crash on the other.
//
// The source is the same for every clone, so it stays the readable loop; what changes is the
// vector width. The library is built with -ffp-contract=off, so no clone fuses a * b + c into
// one rounding: every clone computes the bits the baseline does. Put a macro on hot loops
// only: each clone is code, and a call through the resolver is never inlined.
#pragma once

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__CUDACC__)
/// x86-64-v3 (AVX2) and the baseline (SSE2). AVX-512 machines run the v3 clone: for the
/// row kernels (layer norm, the attention softmax, C = 128) GCC 12's v4 build is slower than
/// even the baseline (docs/transformer.md, "Built for the CPU it runs on").
#define RINGGRAD_CPU_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
/// x86-64-v4 (AVX-512) too, for arithmetic-heavy loops that measured faster with it (GELU).
#define RINGGRAD_CPU_CLONES_AVX512 __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define RINGGRAD_CPU_CLONES
#define RINGGRAD_CPU_CLONES_AVX512
#endif
