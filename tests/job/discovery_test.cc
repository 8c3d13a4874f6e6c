// DiscoverJobEnvironment from the environments of podscope launch /
// torchrun, SLURM and Open MPI, and SLURM node lists.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "podscope/job/environment.h"

namespace podscope::job {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

absl::StatusOr<JobEnvironment> Discover(
    std::map<std::string, std::string> vars) {
  return DiscoverJobEnvironment(
      [&](const char* name) -> std::optional<std::string> {
        auto it = vars.find(name);
        if (it == vars.end()) return std::nullopt;
        return it->second;
      });
}

TEST(Discovery, NothingSetIsASingleProcess) {
  auto e = Discover({});
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->rank, 0);
  EXPECT_EQ(e->world_size, 1);
  EXPECT_EQ(e->launcher, "none");
  EXPECT_EQ(e->coordinator_address, "");
}

TEST(Discovery, TorchrunEnvironment) {
  auto e = Discover({{"RANK", "5"},
                     {"WORLD_SIZE", "8"},
                     {"LOCAL_RANK", "1"},
                     {"LOCAL_WORLD_SIZE", "4"},
                     {"GROUP_RANK", "1"},
                     {"MASTER_ADDR", "10.0.0.1"},
                     {"MASTER_PORT", "29400"},
                     {"PODSCOPE_JOB_TOKEN", "tok"}});
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->rank, 5);
  EXPECT_EQ(e->world_size, 8);
  EXPECT_EQ(e->local_rank, 1);
  EXPECT_EQ(e->local_world_size, 4);
  EXPECT_EQ(e->group_rank, 1);
  EXPECT_EQ(e->coordinator_address, "10.0.0.1:29400");
  EXPECT_EQ(e->launcher, "torchrun");
  EXPECT_EQ(e->job_token, "tok");
}

TEST(Discovery, PodscopeLauncherIsNamed) {
  auto e = Discover({{"RANK", "0"},
                     {"WORLD_SIZE", "2"},
                     {"MASTER_ADDR", "127.0.0.1"},
                     {"MASTER_PORT", "1234"},
                     {"PODSCOPE_LAUNCHER", "podscope"}});
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->launcher, "podscope");
  EXPECT_EQ(e->coordinator_address, "127.0.0.1:1234");
}

TEST(Discovery, BadTorchrunEnvironmentsNameTheVariable) {
  auto out_of_range = Discover({{"RANK", "4"},
                                {"WORLD_SIZE", "4"},
                                {"MASTER_ADDR", "h"},
                                {"MASTER_PORT", "1"}});
  EXPECT_EQ(out_of_range.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(out_of_range.status().message()),
              HasSubstr("RANK=4"));
  auto not_a_number = Discover({{"RANK", "one"}, {"WORLD_SIZE", "4"}});
  EXPECT_THAT(std::string(not_a_number.status().message()), HasSubstr("RANK"));
  auto no_master = Discover({{"RANK", "1"}, {"WORLD_SIZE", "2"}});
  EXPECT_THAT(std::string(no_master.status().message()),
              HasSubstr("MASTER_ADDR"));
  auto half = Discover({{"RANK", "1"}});
  EXPECT_THAT(std::string(half.status().message()), HasSubstr("WORLD_SIZE"));
  auto port = Discover({{"RANK", "0"},
                        {"WORLD_SIZE", "2"},
                        {"MASTER_ADDR", "h"},
                        {"MASTER_PORT", "70000"}});
  EXPECT_THAT(std::string(port.status().message()), HasSubstr("MASTER_PORT"));
}

TEST(Discovery, SlurmEnvironmentUsesTheFirstNode) {
  auto e = Discover({{"SLURM_PROCID", "6"},
                     {"SLURM_NTASKS", "8"},
                     {"SLURM_LOCALID", "2"},
                     {"SLURM_NODEID", "1"},
                     {"SLURM_NTASKS_PER_NODE", "4"},
                     {"SLURM_JOB_NODELIST", "node[07-09,12],login1"}});
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->launcher, "slurm");
  EXPECT_EQ(e->rank, 6);
  EXPECT_EQ(e->world_size, 8);
  EXPECT_EQ(e->local_rank, 2);
  EXPECT_EQ(e->local_world_size, 4);
  EXPECT_EQ(e->group_rank, 1);
  EXPECT_EQ(e->coordinator_address, "node07:29500");
  // SLURM_TASKS_PER_NODE's "2(x4)" form, and MASTER_* overriding.
  auto o = Discover({{"SLURM_PROCID", "0"},
                     {"SLURM_NTASKS", "8"},
                     {"SLURM_TASKS_PER_NODE", "2(x4)"},
                     {"SLURM_JOB_NODELIST", "a1"},
                     {"MASTER_PORT", "4000"}});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->local_world_size, 2);
  EXPECT_EQ(o->coordinator_address, "a1:4000");
}

TEST(Discovery, OpenMpiEnvironment) {
  auto one_node = Discover({{"OMPI_COMM_WORLD_RANK", "1"},
                            {"OMPI_COMM_WORLD_SIZE", "2"},
                            {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                            {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}});
  ASSERT_TRUE(one_node.ok()) << one_node.status();
  EXPECT_EQ(one_node->launcher, "openmpi");
  EXPECT_EQ(one_node->rank, 1);
  EXPECT_EQ(one_node->coordinator_address, "127.0.0.1:29500");
  auto many = Discover({{"OMPI_COMM_WORLD_RANK", "3"},
                        {"OMPI_COMM_WORLD_SIZE", "4"},
                        {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                        {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                        {"OMPI_COMM_WORLD_NODE_RANK", "1"}});
  EXPECT_EQ(many.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(many.status().message()), HasSubstr("MASTER_ADDR"));
  auto with_master = Discover({{"OMPI_COMM_WORLD_RANK", "3"},
                               {"OMPI_COMM_WORLD_SIZE", "4"},
                               {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                               {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                               {"OMPI_COMM_WORLD_NODE_RANK", "1"},
                               {"MASTER_ADDR", "fe80::1"},
                               {"MASTER_PORT", "5"}});
  ASSERT_TRUE(with_master.ok()) << with_master.status();
  EXPECT_EQ(with_master->group_rank, 1);
  EXPECT_EQ(with_master->coordinator_address, "[fe80::1]:5");
}

TEST(Discovery, SlurmNodeLists) {
  EXPECT_THAT(*ExpandSlurmNodeList("node[01-04,07]"),
              ElementsAre("node01", "node02", "node03", "node04", "node07"));
  EXPECT_THAT(*ExpandSlurmNodeList("a,b[9-11],c"),
              ElementsAre("a", "b9", "b10", "b11", "c"));
  EXPECT_THAT(*ExpandSlurmNodeList("r[1-2]-n[1,3]"),
              ElementsAre("r1-n1", "r1-n3", "r2-n1", "r2-n3"));
  EXPECT_THAT(*ExpandSlurmNodeList("gpu[008-010]"),
              ElementsAre("gpu008", "gpu009", "gpu010"));
  EXPECT_EQ(ExpandSlurmNodeList("node[1-3").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ExpandSlurmNodeList("node]1").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(ExpandSlurmNodeList("n[5-2]").status().message()),
              HasSubstr("bad range '5-2'"));
}

}  // namespace
}  // namespace podscope::job
