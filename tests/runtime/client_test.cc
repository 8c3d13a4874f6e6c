// Platform and device selection, topology and memory accounting.

#include "podscope/runtime/pjrt/client.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util.h"

namespace podscope::runtime {
namespace {

using ::testing::HasSubstr;
using testing::ScopedEnv;

// Clears every variable the client reads, then applies the given ones.
class EnvTest : public ::testing::Test {
 protected:
  ScopedEnv device_{"PODSCOPE_DEVICE", std::nullopt};
  ScopedEnv pjrt_{"PJRT_DEVICE", std::nullopt};
  ScopedEnv count_{"CPU_NUM_DEVICES", std::nullopt};
  ScopedEnv visible_{"PODSCOPE_VISIBLE_DEVICES", std::nullopt};
};

TEST_F(EnvTest, DefaultsToOneCpuDevice) {
  PODSCOPE_ASSERT_OK_AND_ASSIGN(auto client, CreateClient());
  EXPECT_EQ(client->platform_name(), "CPU");
  EXPECT_EQ(client->process_index(), 0);
  EXPECT_EQ(client->process_count(), 1);
  ASSERT_EQ(client->device_count(), 1);
  ASSERT_EQ(client->addressable_device_count(), 1);
  const Device* device = client->devices()[0];
  EXPECT_EQ(device->id(), 0);
  EXPECT_EQ(device->kind(), "CPU");
  EXPECT_EQ(device->process_index(), 0);
  EXPECT_EQ(device->local_hardware_id(), 0);
  EXPECT_TRUE(device->addressable());
  EXPECT_EQ(device->local_ordinal(), 0);
  EXPECT_EQ(device->global_ordinal(), 0);
  EXPECT_EQ(device->ToString(), "CPU:0");
}

TEST_F(EnvTest, PjrtDeviceIsTheFallbackAndCaseInsensitive) {
  ScopedEnv pjrt("PJRT_DEVICE", "cpu");
  PODSCOPE_ASSERT_OK_AND_ASSIGN(auto client, CreateClient());
  EXPECT_EQ(client->platform_name(), "CPU");
}

TEST_F(EnvTest, UnknownPlatformListsTheAvailableOnes) {
  ScopedEnv pjrt("PJRT_DEVICE", "TPU");
  auto client = CreateClient();
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(client.status().message(), HasSubstr("'TPU'"));
  EXPECT_THAT(client.status().message(), HasSubstr("PJRT_DEVICE"));
  EXPECT_THAT(client.status().message(), HasSubstr("available platforms: CPU"));
}

TEST_F(EnvTest, PodscopeDeviceTakesPrecedenceOverPjrtDevice) {
  ScopedEnv pjrt("PJRT_DEVICE", "CPU");
  ScopedEnv device("PODSCOPE_DEVICE", "CUDA");
  auto client = CreateClient();
  ASSERT_FALSE(client.ok());
  EXPECT_THAT(client.status().message(), HasSubstr("'CUDA'"));
  EXPECT_THAT(client.status().message(), HasSubstr("PODSCOPE_DEVICE"));
}

TEST_F(EnvTest, CpuNumDevicesSetsTheDeviceCount) {
  ScopedEnv count("CPU_NUM_DEVICES", "4");
  PODSCOPE_ASSERT_OK_AND_ASSIGN(auto client, CreateClient());
  ASSERT_EQ(client->device_count(), 4);
  ASSERT_EQ(client->addressable_device_count(), 4);
  for (int i = 0; i < 4; ++i) {
    const Device* device = client->addressable_devices()[i];
    EXPECT_EQ(device->id(), i);
    EXPECT_EQ(device->local_ordinal(), i);
    EXPECT_EQ(device->local_hardware_id(), i);
  }
}

TEST_F(EnvTest, BadCpuNumDevicesIsAnErrorNamingTheVariable) {
  for (const char* value : {"zero", "0", "-2"}) {
    ScopedEnv count("CPU_NUM_DEVICES", value);
    auto client = CreateClient();
    ASSERT_FALSE(client.ok()) << value;
    EXPECT_THAT(client.status().message(), HasSubstr("CPU_NUM_DEVICES"));
    EXPECT_THAT(client.status().message(), HasSubstr(value));
  }
}

TEST_F(EnvTest, VisibleDevicesSelectASubset) {
  ScopedEnv count("CPU_NUM_DEVICES", "4");
  ScopedEnv visible("PODSCOPE_VISIBLE_DEVICES", "3, 1");
  PODSCOPE_ASSERT_OK_AND_ASSIGN(auto client, CreateClient());
  ASSERT_EQ(client->addressable_device_count(), 2);
  EXPECT_EQ(client->addressable_devices()[0]->local_hardware_id(), 1);
  EXPECT_EQ(client->addressable_devices()[1]->local_hardware_id(), 3);
  EXPECT_EQ(client->addressable_devices()[0]->id(), 0);
  EXPECT_EQ(client->addressable_devices()[1]->id(), 1);
}

TEST_F(EnvTest, VisibleDeviceOutOfRangeIsAnError) {
  ScopedEnv count("CPU_NUM_DEVICES", "2");
  ScopedEnv visible("PODSCOPE_VISIBLE_DEVICES", "0,5");
  auto client = CreateClient();
  ASSERT_FALSE(client.ok());
  EXPECT_THAT(client.status().message(),
              HasSubstr("PODSCOPE_VISIBLE_DEVICES lists device 5"));
}

TEST_F(EnvTest, MalformedVisibleDevicesIsAnError) {
  ScopedEnv visible("PODSCOPE_VISIBLE_DEVICES", "0,x");
  auto client = CreateClient();
  ASSERT_FALSE(client.ok());
  EXPECT_THAT(client.status().message(), HasSubstr("'0,x'"));
}

TEST(ClientTest, TopologyWithAnotherProcessesDevices) {
  // What a multi-process job will hand the client: four devices, two per
  // process, seen from process 1.
  Topology topology;
  topology.process_index = 1;
  topology.process_count = 2;
  for (int id = 0; id < 4; ++id) {
    topology.devices.push_back({id, id / 2, "CPU", id % 2});
  }
  PODSCOPE_ASSERT_OK_AND_ASSIGN(auto client,
                                Client::Create(ClientOptions(), topology));
  EXPECT_EQ(client->process_index(), 1);
  EXPECT_EQ(client->process_count(), 2);
  EXPECT_EQ(client->device_count(), 4);
  ASSERT_EQ(client->addressable_device_count(), 2);
  EXPECT_EQ(client->addressable_devices()[0]->id(), 2);
  EXPECT_EQ(client->addressable_devices()[1]->local_ordinal(), 1);
  EXPECT_EQ(client->addressable_devices()[1]->global_ordinal(), 3);

  PODSCOPE_ASSERT_OK_AND_ASSIGN(Device * remote, client->LookupDevice(0));
  EXPECT_FALSE(remote->addressable());
  EXPECT_EQ(remote->local_ordinal(), -1);
  auto stats = remote->GetMemoryStats();
  EXPECT_EQ(stats.status().code(), absl::StatusCode::kFailedPrecondition);

  auto buffer = client->BufferFromLiteral(Literal::ScalarF32(1), remote);
  EXPECT_FALSE(buffer.ok());
  EXPECT_THAT(buffer.status().message(), HasSubstr("not addressable"));
  EXPECT_FALSE(client->LookupDevice(4).ok());
  EXPECT_FALSE(client->LookupAddressableDevice(2).ok());
}

TEST(ClientTest, MemoryStatsTrackBuffers) {
  auto client = testing::MakeClient();
  Device* device = client->addressable_devices()[0];
  PODSCOPE_ASSERT_OK_AND_ASSIGN(MemoryStats before, device->GetMemoryStats());
  {
    PODSCOPE_ASSERT_OK_AND_ASSIGN(
        BufferPtr buffer,
        client->BufferFromLiteral(Literal(F32Shape({1000})), device));
    ASSERT_TRUE(buffer->Await().ok());
    PODSCOPE_ASSERT_OK_AND_ASSIGN(MemoryStats during, device->GetMemoryStats());
    EXPECT_EQ(during.bytes_in_use, before.bytes_in_use + 4000);
    EXPECT_GE(during.peak_bytes_in_use, before.bytes_in_use + 4000);
    EXPECT_EQ(during.num_allocs, before.num_allocs + 1);
  }
  ASSERT_TRUE(device->WaitUntilIdle().ok());
  PODSCOPE_ASSERT_OK_AND_ASSIGN(MemoryStats after, device->GetMemoryStats());
  EXPECT_EQ(after.bytes_in_use, before.bytes_in_use);
  EXPECT_GE(after.peak_bytes_in_use, 4000);
}

TEST(ClientTest, MemoryLimitFailsTheTransferWithTheDeviceName) {
  ClientOptions options;
  options.device_memory_limit_bytes = 1024;
  PODSCOPE_ASSERT_OK_AND_ASSIGN(auto client, CreateClient(options));
  Device* device = client->addressable_devices()[0];
  PODSCOPE_ASSERT_OK_AND_ASSIGN(
      BufferPtr buffer,
      client->BufferFromLiteral(Literal(F32Shape({1024})), device));
  absl::Status status = buffer->Await();
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(status.message(), HasSubstr("CPU:0"));
  EXPECT_EQ(buffer->ToLiteral().Await().status().code(),
            absl::StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace podscope::runtime
