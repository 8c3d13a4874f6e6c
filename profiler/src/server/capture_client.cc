#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <mutex>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "podscope/profiler/capture.h"
#include "podscope/profiler/clock.h"
#include "podscope/profiler/profiler_service.grpc.pb.h"
#include "podscope/profiler/session.h"
#include "podscope/trace_format/streamed_file.h"
#include "podscope/trace_format/trace.pb.h"
#include "src/session_internal.h"

namespace podscope::profiler {
namespace {

namespace pb = ::podscope::profiler::proto;
namespace tf = ::podscope::trace_format;

std::string Describe(const grpc::Status& s) {
  static const char* const kNames[] = {
      "OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED",
      "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED",
      "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED",
      "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"};
  const int code = static_cast<int>(s.error_code());
  const char* name = code >= 0 && code <= 16 ? kNames[code] : "?";
  return absl::StrCat(name, ": ", s.error_message());
}

absl::StatusOr<std::string> ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot read the TLS CA file '", path, "'"));
  }
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A connection to one worker's server.
class Worker {
 public:
  static absl::StatusOr<std::unique_ptr<Worker>> Connect(
      const std::string& address, const ConnectOptions& options) {
    std::shared_ptr<grpc::ChannelCredentials> creds;
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(64 << 20);
    if (!options.tls_ca_file.empty()) {
      auto ca = ReadText(options.tls_ca_file);
      if (!ca.ok()) return ca.status();
      grpc::SslCredentialsOptions ssl;
      ssl.pem_root_certs = *ca;
      creds = grpc::SslCredentials(ssl);
      if (!options.tls_server_name.empty()) {
        args.SetSslTargetNameOverride(options.tls_server_name);
      }
    } else {
      creds = grpc::InsecureChannelCredentials();
    }
    auto channel = grpc::CreateCustomChannel(address, creds, args);
    const auto deadline = std::chrono::system_clock::now() +
                          std::chrono::milliseconds(options.connect_timeout_ms);
    if (!channel->WaitForConnected(deadline)) {
      return absl::UnavailableError(absl::StrCat(
          address, ": no connection within ", options.connect_timeout_ms,
          " ms (is its profiler server running and reachable?)"));
    }
    std::string token = options.token;
    if (token.empty()) {
      if (const char* env = std::getenv("PODSCOPE_PROFILER_TOKEN")) token = env;
    }
    return std::unique_ptr<Worker>(new Worker(address, channel, token));
  }

  void Prepare(grpc::ClientContext* ctx, int64_t timeout_ms = 10000) const {
    if (!token_.empty()) ctx->AddMetadata("authorization", "Bearer " + token_);
    if (timeout_ms > 0) {
      ctx->set_deadline(std::chrono::system_clock::now() +
                        std::chrono::milliseconds(timeout_ms));
    }
  }

  absl::StatusOr<pb::ProcessInfo> Info() const {
    grpc::ClientContext ctx;
    Prepare(&ctx);
    pb::ProcessInfo info;
    grpc::Status s = stub_->GetInfo(&ctx, pb::GetInfoRequest(), &info);
    if (!s.ok()) return Error("GetInfo", s);
    return info;
  }

  absl::StatusOr<ClockEstimate> Probe(int probes) const {
    ClockEstimate best;
    best.round_trip_ns = std::numeric_limits<int64_t>::max();
    grpc::Status last;
    int ok = 0;
    for (int i = 0; i < std::max(probes, 1); ++i) {
      grpc::ClientContext ctx;
      Prepare(&ctx, 2000);
      pb::ClockProbeRequest req;
      pb::ClockProbeResponse resp;
      const int64_t t0 = MonotonicNs();
      req.set_client_send_ns(t0);
      last = stub_->ProbeClock(&ctx, req, &resp);
      const int64_t t3 = MonotonicNs();
      if (!last.ok()) continue;
      ++ok;
      const int64_t t1 = resp.server_receive_ns();
      const int64_t t2 = resp.server_send_ns();
      const int64_t rtt = (t3 - t0) - (t2 - t1);
      if (rtt < best.round_trip_ns) {
        best.round_trip_ns = rtt;
        best.local_ns = t1 + (t2 - t1) / 2;
        // reference = local + offset, from the midpoints of both sides.
        best.offset_ns = (t0 + (t3 - t0) / 2) - best.local_ns;
        best.uncertainty_ns = std::max<int64_t>(rtt / 2, 1);
      }
    }
    if (ok == 0) return Error("ProbeClock", last);
    return best;
  }

  grpc::ClientContext* capture_context() { return &capture_ctx_; }
  pb::ProfilerService::Stub* stub() { return stub_.get(); }
  const std::string& address() const { return address_; }

  absl::Status Error(const std::string& call, const grpc::Status& s) const {
    return absl::Status(static_cast<absl::StatusCode>(s.error_code()),
                        absl::StrCat(address_, ": ", call, " failed: ",
                                     Describe(s)));
  }

 private:
  Worker(std::string address, std::shared_ptr<grpc::Channel> channel,
         std::string token)
      : address_(std::move(address)),
        stub_(pb::ProfilerService::NewStub(channel)),
        token_(std::move(token)) {}

  std::string address_;
  std::unique_ptr<pb::ProfilerService::Stub> stub_;
  std::string token_;
  grpc::ClientContext capture_ctx_;
};


std::string JsonString(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20 || c >= 0x80) {
          // Non-ASCII bytes are escaped one by one: the manifest stays
          // valid JSON whatever a host name or error holds.
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

struct Shared {
  std::mutex mutex;
  CaptureProgress progress;
};

void CaptureOne(const CaptureOptions& options, const std::string& dir,
                const std::string& session, WorkerResult* result,
                Shared* shared, std::vector<std::string>* used_paths) {
  auto fail = [&](const absl::Status& s) {
    result->ok = false;
    result->error = std::string(s.message());
    std::lock_guard<std::mutex> lock(shared->mutex);
    shared->progress.failed += 1;
    shared->progress.finished += 1;
  };
  auto connected = Worker::Connect(result->address, options.connect);
  if (!connected.ok()) return fail(connected.status());
  Worker& worker = **connected;
  auto info = worker.Info();
  if (!info.ok()) return fail(info.status());
  result->host = info->host();
  result->pid = info->pid();
  auto before = worker.Probe(options.clock_probes);
  if (!before.ok()) return fail(before.status());
  result->clock.push_back(*before);

  std::string name = absl::StrCat(info->host(), ".", info->pid());
  {
    std::lock_guard<std::mutex> lock(shared->mutex);
    // Two addresses of one process (or a reused pid on another host of the
    // same name) must not overwrite each other's file.
    std::string candidate = name;
    for (int n = 2; std::find(used_paths->begin(), used_paths->end(),
                              candidate) != used_paths->end();
         ++n) {
      candidate = absl::StrCat(name, "-", n);
    }
    used_paths->push_back(candidate);
    name = candidate;
  }
  result->path = (std::filesystem::path(dir) /
                  absl::StrCat(name, std::string(tf::kFileExtension))).string();
  auto cancelled = [&] {
    return options.cancel != nullptr &&
           options.cancel->load(std::memory_order_relaxed);
  };
  if (cancelled()) {
    result->path.clear();
    return fail(absl::CancelledError(
        absl::StrCat(result->address, ": cancelled before recording")));
  }
  auto file = tf::StreamedFile::Create(result->path);
  if (!file.ok()) return fail(file.status());

  pb::CaptureRequest request;
  request.set_duration_ms(options.duration_ms);
  request.set_session_id(session);
  // A session the user did not name is only this capture's folder name:
  // share whatever capture the worker is running.
  request.set_join_any_session(options.session.empty());
  request.set_level(options.level);
  request.set_sampling_hz(options.sampling_hz);
  request.set_compression_level(-1);
  request.set_client("podscope capture");
  grpc::ClientContext* ctx = worker.capture_context();
  // The stream lasts the capture plus the time to drain and close.
  worker.Prepare(ctx, options.duration_ms + 60'000);
  auto reader = worker.stub()->Capture(ctx, request);
  {
    std::lock_guard<std::mutex> lock(shared->mutex);
    shared->progress.streaming += 1;
  }
  // On cancel, asks the worker to stop (again every 200 ms, in case the
  // capture had not started yet) until the stream ends; the worker then
  // sends the rest of the file as when the duration runs out.
  std::mutex stream_mutex;
  std::condition_variable stream_cv;
  bool stream_over = false;
  // The session the worker actually records (it may be one this client
  // joined), once its first message says.
  std::string stream_session = options.session.empty() ? "" : session;
  std::thread stopper;
  if (options.cancel != nullptr) {
    stopper = std::thread([&] {
      std::unique_lock<std::mutex> lock(stream_mutex);
      while (!stream_over) {
        if (!cancelled()) {
          stream_cv.wait_for(lock, std::chrono::milliseconds(50));
          continue;
        }
        pb::StopRequest stop;
        stop.set_session_id(stream_session);
        lock.unlock();
        grpc::ClientContext stop_ctx;
        worker.Prepare(&stop_ctx, 2000);
        pb::StopResponse stopped;
        // A failure (no capture running yet, or any more) is retried or
        // moot: the loop ends with the stream.
        (void)worker.stub()->Stop(&stop_ctx, stop, &stopped);
        lock.lock();
        stream_cv.wait_for(lock, std::chrono::milliseconds(200),
                           [&] { return stream_over; });
      }
    });
  }
  pb::CaptureData data;
  bool done = false;
  bool receiver_indexes = false;
  absl::Status file_status;
  while (reader->Read(&data)) {
    if (file_status.ok()) file_status = (*file)->Append(data.records());
    if (!data.session_id().empty() && stopper.joinable()) {
      std::lock_guard<std::mutex> lock(stream_mutex);
      stream_session = data.session_id();
    }
    std::lock_guard<std::mutex> lock(shared->mutex);
    shared->progress.bytes += data.records().size();
    shared->progress.events += data.events() - result->events;
    result->events = data.events();
    result->dropped = data.dropped();
    if (data.done()) {
      done = true;
      receiver_indexes = data.receiver_indexes();
    }
  }
  const grpc::Status status = reader->Finish();
  if (stopper.joinable()) {
    {
      std::lock_guard<std::mutex> lock(stream_mutex);
      stream_over = true;
    }
    stream_cv.notify_all();
    stopper.join();
  }
  {
    std::lock_guard<std::mutex> lock(shared->mutex);
    shared->progress.streaming -= 1;
  }
  result->bytes = (*file)->bytes_received();
  absl::Status error;
  if (!status.ok()) {
    error = worker.Error("Capture", status);
  } else if (!file_status.ok()) {
    error = absl::DataLossError(absl::StrCat(result->address, ": ",
                                             file_status.message()));
  } else if (!done || (!(*file)->complete() && !receiver_indexes)) {
    error = absl::DataLossError(absl::StrCat(
        result->address, ": the capture stream ended before the file was "
        "complete"));
  }
  // The second measurement, when the worker is still there.
  if (status.ok()) {
    auto after = worker.Probe(options.clock_probes);
    if (after.ok()) result->clock.push_back(*after);
  }
  if (result->clock.size() == 2) {
    const ClockEstimate& a = result->clock[0];
    const ClockEstimate& b = result->clock[1];
    if (b.local_ns != a.local_ns) {
      // reference advances (1 + d(offset)/d(local)) per local ns.
      result->drift_ppm = -1e6 * static_cast<double>(b.offset_ns - a.offset_ns) /
                          static_cast<double>(b.local_ns - a.local_ns);
    }
  }
  tf::proto::ClockRecord clock;
  for (const ClockEstimate& e : result->clock) {
    tf::proto::ClockOffset* o = clock.add_offsets();
    o->set_local_monotonic_ns(e.local_ns);
    o->set_offset_ns(e.offset_ns);
    o->set_uncertainty_ns(e.uncertainty_ns);
    o->set_reference("capture client");
  }
  absl::Status s = (*file)->bytes_written() > 0
                       ? (*file)->AddRecord(tf::RecordType::kClock, clock)
                       : absl::OkStatus();
  absl::Status f = (*file)->Finish(/*build_index=*/error.ok() && receiver_indexes);
  if (error.ok() && !s.ok()) error = s;
  if (error.ok() && !f.ok()) error = f;
  if (!error.ok()) return fail(error);
  result->ok = true;
  std::lock_guard<std::mutex> lock(shared->mutex);
  shared->progress.finished += 1;
}

absl::Status WriteManifest(const CaptureOptions& options,
                           const CaptureResult& result, int64_t started_ns,
                           int64_t wall_ms) {
  std::ostringstream j;
  j << "{\n  \"session\": " << JsonString(result.session)
    << ",\n  \"duration_ms\": " << options.duration_ms
    << ",\n  \"started_realtime_ns\": " << started_ns
    << ",\n  \"wall_ms\": " << wall_ms
    << ",\n  \"reference_clock\": \"CLOCK_MONOTONIC of the capture client\""
    << ",\n  \"asked\": " << result.workers.size()
    << ",\n  \"answered\": " << result.answered() << ",\n  \"workers\": [";
  for (size_t i = 0; i < result.workers.size(); ++i) {
    const WorkerResult& w = result.workers[i];
    j << (i ? "," : "") << "\n    {\"address\": " << JsonString(w.address)
      << ", \"ok\": " << (w.ok ? "true" : "false");
    if (!w.error.empty()) j << ", \"error\": " << JsonString(w.error);
    if (!w.host.empty()) {
      j << ", \"host\": " << JsonString(w.host) << ", \"pid\": " << w.pid;
    }
    if (!w.path.empty()) {
      j << ", \"file\": "
        << JsonString(std::filesystem::path(w.path).filename().string());
    }
    j << ", \"bytes\": " << w.bytes << ", \"events\": " << w.events
      << ", \"dropped\": " << w.dropped << ", \"clock\": [";
    for (size_t k = 0; k < w.clock.size(); ++k) {
      const ClockEstimate& c = w.clock[k];
      j << (k ? ", " : "") << "{\"local_ns\": " << c.local_ns
        << ", \"offset_ns\": " << c.offset_ns
        << ", \"uncertainty_ns\": " << c.uncertainty_ns
        << ", \"round_trip_ns\": " << c.round_trip_ns << "}";
    }
    j << "], \"drift_ppm\": " << w.drift_ppm << "}";
  }
  j << "\n  ]\n}\n";
  const std::string tmp = result.manifest_path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << j.str();
    if (!out) {
      return absl::InternalError(absl::StrCat("cannot write ", tmp));
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, result.manifest_path, ec);
  if (ec) {
    return absl::InternalError(absl::StrCat("cannot write ",
                                            result.manifest_path, ": ",
                                            ec.message()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ClockEstimate> MeasureClockOffset(const std::string& address,
                                                 const ConnectOptions& connect,
                                                 int probes) {
  auto worker = Worker::Connect(address, connect);
  if (!worker.ok()) return worker.status();
  return (*worker)->Probe(probes);
}

absl::StatusOr<CaptureResult> CaptureWorkers(const CaptureOptions& options) {
  if (options.workers.empty()) {
    return absl::InvalidArgumentError("capture: no workers to capture");
  }
  if (options.logdir.empty()) {
    return absl::InvalidArgumentError("capture: no log directory");
  }
  if (options.duration_ms <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "capture: the duration must be positive, not ", options.duration_ms,
        " ms"));
  }
  if (options.clock_probes < 1 || options.clock_probes > 1000) {
    return absl::InvalidArgumentError("capture: clock_probes must be 1..1000");
  }
  CaptureResult result;
  result.session = options.session.empty()
                       ? internal::UtcSessionId(/*with_millis=*/false)
                       : options.session;
  if (!IsValidSessionId(result.session)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "capture: session '", result.session,
        "' is not a valid folder name (letters, digits, '-', '_', '.', ':', "
        "'+'; at most 128)"));
  }
  const std::filesystem::path dir =
      std::filesystem::path(options.logdir) / result.session;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return absl::InternalError(absl::StrCat("capture: cannot create ",
                                            dir.string(), ": ", ec.message()));
  }
  result.session_dir = dir.string();
  result.manifest_path = (dir / "manifest.json").string();
  result.workers.resize(options.workers.size());
  for (size_t i = 0; i < options.workers.size(); ++i) {
    result.workers[i].address = options.workers[i];
  }

  timespec rt;
  clock_gettime(CLOCK_REALTIME, &rt);
  const int64_t started_realtime = int64_t{rt.tv_sec} * 1'000'000'000 + rt.tv_nsec;
  const int64_t t0 = MonotonicNs();
  Shared shared;
  shared.progress.workers = static_cast<int>(options.workers.size());
  std::vector<std::string> used_paths;
  std::vector<std::thread> threads;
  threads.reserve(options.workers.size());
  for (size_t i = 0; i < options.workers.size(); ++i) {
    threads.emplace_back([&, i] {
      CaptureOne(options, result.session_dir, result.session,
                 &result.workers[i], &shared, &used_paths);
    });
  }
  std::atomic<bool> all_done{false};
  std::thread reporter;
  if (options.progress) {
    reporter = std::thread([&] {
      while (!all_done.load()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(250));
        CaptureProgress p;
        {
          std::lock_guard<std::mutex> lock(shared.mutex);
          p = shared.progress;
        }
        p.elapsed_ms = (MonotonicNs() - t0) / 1'000'000;
        if (!all_done.load()) options.progress(p);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  all_done = true;
  result.cancelled = options.cancel != nullptr && options.cancel->load();
  if (reporter.joinable()) reporter.join();
  const int64_t wall_ms = (MonotonicNs() - t0) / 1'000'000;
  if (absl::Status s = WriteManifest(options, result, started_realtime, wall_ms);
      !s.ok()) {
    return s;
  }
  return result;
}

}  // namespace podscope::profiler
