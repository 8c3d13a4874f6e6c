// The fused elementwise kernel: evaluates a FusedProgram tile by tile, so a
// chain of ops makes one pass over memory.

#include <cmath>
#include <cstring>
#include <vector>

#include "compiler/fusion.h"
#include "parallel.h"

namespace podscope::runtime::internal {
namespace {

// Small enough that a tile per instruction stays in L1/L2 cache.
constexpr int64_t kTile = 1024;
// Elements below which waking the pool costs more than it saves.
constexpr int64_t kParallelElements = 1 << 16;

template <typename T>
using In = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;
template <typename T>
using Out = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;

template <typename T>
void Arithmetic(const FusedInstr& instr, const void* const* in, void* out,
                int64_t n) {
  Out<T> r(static_cast<T*>(out), n);
  In<T> a(static_cast<const T*>(in[0]), n);
  switch (instr.op) {
    case OpKind::kAdd:
      r = a + In<T>(static_cast<const T*>(in[1]), n);
      break;
    case OpKind::kSub:
      r = a - In<T>(static_cast<const T*>(in[1]), n);
      break;
    case OpKind::kMul:
      r = a * In<T>(static_cast<const T*>(in[1]), n);
      break;
    case OpKind::kDiv:
      r = a / In<T>(static_cast<const T*>(in[1]), n);
      break;
    case OpKind::kMax:
      r = a.max(In<T>(static_cast<const T*>(in[1]), n));
      break;
    case OpKind::kNeg:
      r = -a;
      break;
    case OpKind::kRelu:
      r = a.max(T(0));
      break;
    case OpKind::kSelect: {
      In<uint8_t> pred(static_cast<const uint8_t*>(in[0]), n);
      r = (pred != uint8_t(0))
              .select(In<T>(static_cast<const T*>(in[1]), n),
                      In<T>(static_cast<const T*>(in[2]), n));
      break;
    }
    case OpKind::kBroadcast:
      r.setConstant(*static_cast<const T*>(in[0]));
      break;
    default:
      break;
  }
}

void Transcendental(const FusedInstr& instr, const void* const* in, void* out,
                    int64_t n) {
  Out<float> r(static_cast<float*>(out), n);
  In<float> a(static_cast<const float*>(in[0]), n);
  switch (instr.op) {
    case OpKind::kExp:
      r = a.exp();
      break;
    case OpKind::kLog:
      r = a.log();
      break;
    case OpKind::kTanh:
      r = a.tanh();
      break;
    default:
      break;
  }
}

template <typename T>
void CompareTyped(CompareDirection d, const void* const* in, void* out,
                  int64_t n) {
  Out<uint8_t> r(static_cast<uint8_t*>(out), n);
  In<T> a(static_cast<const T*>(in[0]), n);
  In<T> b(static_cast<const T*>(in[1]), n);
  switch (d) {
    case CompareDirection::kEq:
      r = (a == b).template cast<uint8_t>();
      break;
    case CompareDirection::kNe:
      r = (a != b).template cast<uint8_t>();
      break;
    case CompareDirection::kLt:
      r = (a < b).template cast<uint8_t>();
      break;
    case CompareDirection::kLe:
      r = (a <= b).template cast<uint8_t>();
      break;
    case CompareDirection::kGt:
      r = (a > b).template cast<uint8_t>();
      break;
    case CompareDirection::kGe:
      r = (a >= b).template cast<uint8_t>();
      break;
  }
}

template <typename From>
void ConvertFrom(ElementType to, const void* in, void* out, int64_t n) {
  In<From> a(static_cast<const From*>(in), n);
  switch (to) {
    case ElementType::kF32:
      Out<float>(static_cast<float*>(out), n) = a.template cast<float>();
      break;
    case ElementType::kI32:
      Out<int32_t>(static_cast<int32_t*>(out), n) = a.template cast<int32_t>();
      break;
    case ElementType::kPred:
      Out<uint8_t>(static_cast<uint8_t*>(out), n) =
          (a != From(0)).template cast<uint8_t>();
      break;
  }
}

void Eval(const FusedInstr& instr, const void* const* in, void* out,
          int64_t n) {
  switch (instr.op) {
    case OpKind::kExp:
    case OpKind::kLog:
    case OpKind::kTanh:
      Transcendental(instr, in, out, n);
      return;
    case OpKind::kCompare:
      switch (instr.operand_type) {
        case ElementType::kF32:
          return CompareTyped<float>(instr.direction, in, out, n);
        case ElementType::kI32:
          return CompareTyped<int32_t>(instr.direction, in, out, n);
        case ElementType::kPred:
          return CompareTyped<uint8_t>(instr.direction, in, out, n);
      }
      return;
    case OpKind::kConvert:
      switch (instr.operand_type) {
        case ElementType::kF32:
          return ConvertFrom<float>(instr.type, in[0], out, n);
        case ElementType::kI32:
          return ConvertFrom<int32_t>(instr.type, in[0], out, n);
        case ElementType::kPred:
          return ConvertFrom<uint8_t>(instr.type, in[0], out, n);
      }
      return;
    default:
      switch (instr.type) {
        case ElementType::kF32:
          return Arithmetic<float>(instr, in, out, n);
        case ElementType::kI32:
          return Arithmetic<int32_t>(instr, in, out, n);
        case ElementType::kPred:
          // Only select and broadcast produce pred among arithmetic ops;
          // both just move bytes.
          return Arithmetic<uint8_t>(instr, in, out, n);
      }
  }
}

// Evaluates elements [begin, end) with a private scratch tile per
// instruction.
void RunRange(const FusedProgram& program, absl::Span<const void* const> inputs,
              void* output, int64_t begin, int64_t end) {
  const size_t count = program.instrs.size();
  std::vector<uint32_t> scratch(count * kTile);
  const int64_t out_size = ElementSize(program.instrs.back().type);
  for (int64_t tile = begin; tile < end; tile += kTile) {
    const int64_t n = std::min(kTile, end - tile);
    for (size_t i = 0; i < count; ++i) {
      const FusedInstr& instr = program.instrs[i];
      const void* operands[3] = {nullptr, nullptr, nullptr};
      for (int k = 0; k < instr.num_operands; ++k) {
        const int o = instr.operands[k];
        if (o >= 0) {
          operands[k] = scratch.data() + o * kTile;
        } else if (instr.op == OpKind::kBroadcast) {
          operands[k] = inputs[-(o + 1)];  // one element, read in place
        } else {
          const ElementType type =
              k == 0 ? instr.operand_type
                     : (instr.op == OpKind::kSelect ? instr.type
                                                    : instr.operand_type);
          operands[k] = static_cast<const char*>(inputs[-(o + 1)]) +
                        tile * ElementSize(type);
        }
      }
      void* out = i + 1 == count
                      ? static_cast<char*>(output) + tile * out_size
                      : static_cast<void*>(scratch.data() + i * kTile);
      Eval(instr, operands, out, n);
    }
  }
}

}  // namespace

absl::Status RunFused(const FusedProgram& program,
                      absl::Span<const void* const> inputs, void* output,
                      const IntraOpPool& pool) {
  const int64_t n = program.num_elements;
  if (n < kParallelElements) {
    RunRange(program, inputs, output, 0, n);
    return absl::OkStatus();
  }
  const int64_t tiles = (n + kTile - 1) / kTile;
  pool.ParallelFor(tiles, kParallelElements / kTile / 2,
                   [&](int64_t first, int64_t last) {
                     RunRange(program, inputs, output, first * kTile,
                              std::min(n, last * kTile));
                   });
  return absl::OkStatus();
}

}  // namespace podscope::runtime::internal
