// Hot loops compiled for more than one instruction set.
//
// Contract: a function defined with PODSCOPE_TARGET_V3 is compiled for
// x86-64-v3 (AVX2, BMI2: shifts by a register without flag updates,
// LZCNT) and one with PODSCOPE_TARGET_BASELINE for the baseline, each with
// every call inside it inlined; callers pick one by UseX86V3(), and both
// must compute the same results. UseX86V3() is true when the processor
// runs x86-64-v3 code, unless the environment sets PODSCOPE_CPU_BASELINE
// (which tests use to run the baseline code on any machine). Where the
// compiler or target has no such variants, PODSCOPE_HAVE_X86V3 is 0 and
// UseX86V3() is false.
#ifndef PODSCOPE_BASE_CPU_DISPATCH_H_
#define PODSCOPE_BASE_CPU_DISPATCH_H_

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define PODSCOPE_HAVE_X86V3 1
#define PODSCOPE_TARGET_V3 __attribute__((target("arch=x86-64-v3"), flatten))
#else
#define PODSCOPE_HAVE_X86V3 0
#define PODSCOPE_TARGET_V3
#endif
#define PODSCOPE_TARGET_BASELINE __attribute__((flatten))

namespace podscope::base {

bool UseX86V3();

}  // namespace podscope::base

#endif  // PODSCOPE_BASE_CPU_DISPATCH_H_
