#include "compiler/fusion.h"

#include <algorithm>
#include <queue>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"

namespace podscope::runtime::internal {
namespace {

bool IsFusible(const Graph& graph, int id) {
  const Node& node = graph.node(id);
  if (IsElementwise(node.op)) return true;
  return node.op == OpKind::kBroadcast &&
         graph.node(node.operands[0]).shape.num_elements() == 1;
}

FusedProgram MakeProgram(const Graph& graph, std::vector<int> members) {
  std::sort(members.begin(), members.end());
  FusedProgram program;
  program.members = members;
  program.num_elements = graph.node(members.back()).shape.num_elements();
  absl::flat_hash_map<int, int> instr_of;
  for (int id : members) instr_of[id] = static_cast<int>(instr_of.size());
  absl::flat_hash_map<int, int> input_of;
  for (int id : members) {
    const Node& node = graph.node(id);
    FusedInstr instr;
    instr.op = node.op;
    instr.direction = node.attrs.direction;
    instr.type = node.shape.element_type();
    instr.operand_type = graph.node(node.operands[0]).shape.element_type();
    instr.num_operands = static_cast<int>(node.operands.size());
    for (int k = 0; k < instr.num_operands; ++k) {
      const int operand = node.operands[k];
      auto member = instr_of.find(operand);
      if (member != instr_of.end()) {
        instr.operands[k] = member->second;
        continue;
      }
      auto [input, inserted] =
          input_of.emplace(operand, static_cast<int>(program.inputs.size()));
      if (inserted) program.inputs.push_back(operand);
      instr.operands[k] = -(input->second + 1);
    }
    program.instrs.push_back(instr);
  }
  return program;
}

}  // namespace

std::vector<FusedProgram> FormFusions(const Graph& graph) {
  const int n = static_cast<int>(graph.nodes().size());
  std::vector<std::vector<int>> users(n);
  for (int id = 0; id < n; ++id) {
    for (int operand : graph.node(id).operands) {
      if (users[operand].empty() || users[operand].back() != id) {
        users[operand].push_back(id);
      }
    }
  }
  std::vector<bool> is_output(n, false);
  for (int id : graph.outputs()) is_output[id] = true;

  std::vector<int> cluster_of(n, -1);
  std::vector<FusedProgram> programs;
  for (int root = n - 1; root >= 0; --root) {
    if (cluster_of[root] >= 0 || !IsFusible(graph, root)) continue;
    const int cluster = static_cast<int>(programs.size());
    const int64_t elements = graph.node(root).shape.num_elements();
    std::vector<int> members = {root};
    cluster_of[root] = cluster;
    // Candidates are visited from the highest id down, so every user of a
    // candidate that can join has been decided before the candidate is.
    std::priority_queue<int> candidates;
    absl::flat_hash_set<int> seen;
    auto push_operands = [&](int id) {
      for (int operand : graph.node(id).operands) {
        if (cluster_of[operand] < 0 && IsFusible(graph, operand) &&
            seen.insert(operand).second) {
          candidates.push(operand);
        }
      }
    };
    push_operands(root);
    while (!candidates.empty()) {
      const int id = candidates.top();
      candidates.pop();
      const bool joins =
          !is_output[id] && graph.node(id).shape.num_elements() == elements &&
          std::all_of(users[id].begin(), users[id].end(),
                      [&](int user) { return cluster_of[user] == cluster; });
      if (!joins) continue;
      cluster_of[id] = cluster;
      members.push_back(id);
      push_operands(id);
    }
    programs.push_back(MakeProgram(graph, std::move(members)));
  }
  return programs;
}

}  // namespace podscope::runtime::internal
