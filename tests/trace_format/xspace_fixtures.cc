#include "xspace_fixtures.h"

#include <fstream>
#include <string>

namespace podscope::trace_format::testing {
namespace {

namespace xp = ::tensorflow::profiler;

class Plane {
 public:
  explicit Plane(xp::XPlane* p) : p_(p) {}
  int64_t Stat(const std::string& name) {
    const int64_t id = static_cast<int64_t>(p_->stat_metadata_size()) + 1;
    auto& m = (*p_->mutable_stat_metadata())[id];
    m.set_id(id);
    m.set_name(name);
    return id;
  }
  int64_t Event(const std::string& name) {
    const int64_t id = static_cast<int64_t>(p_->event_metadata_size()) + 1;
    auto& m = (*p_->mutable_event_metadata())[id];
    m.set_id(id);
    m.set_name(name);
    return id;
  }
  xp::XEventMetadata& EventMetadata(int64_t id) {
    return (*p_->mutable_event_metadata())[id];
  }
  xp::XLine* Line(int64_t id, const std::string& name, int64_t ts) {
    xp::XLine* l = p_->add_lines();
    l->set_id(id);
    l->set_name(name);
    l->set_timestamp_ns(ts);
    return l;
  }
  xp::XPlane* p_;
};

xp::XEvent* AddEvent(xp::XLine* l, int64_t meta, int64_t offset_ps,
                     int64_t duration_ps) {
  xp::XEvent* e = l->add_events();
  e->set_metadata_id(meta);
  e->set_offset_ps(offset_ps);
  e->set_duration_ps(duration_ps);
  return e;
}

xp::XStat* AddStat(xp::XEvent* e, int64_t meta) {
  xp::XStat* s = e->add_stats();
  s->set_metadata_id(meta);
  return s;
}

}  // namespace

xp::XSpace JaxLikeXSpace(int host) {
  const int64_t t = JaxRun::kBaseNs + host * JaxRun::kHostSkewNs;
  xp::XSpace space;
  space.add_hostnames("worker-" + std::to_string(host));

  Plane cpu(space.add_planes());
  cpu.p_->set_id(0);
  cpu.p_->set_name("/host:CPU");
  const int64_t step_num = cpu.Stat("step_num");
  const int64_t root = cpu.Stat("_r");
  const int64_t group = cpu.Stat("group_id");
  const int64_t hlo_module = cpu.Stat("hlo_module");
  const int64_t module_name = cpu.Stat("jit_train_step");  // a ref target
  const int64_t program_id = cpu.Stat("program_id");
  const int64_t flops = cpu.Stat("flops");
  const int64_t tf_op = cpu.Stat("tf_op");
  const int64_t payload = cpu.Stat("payload");
  const int64_t correlation = cpu.Stat("correlation_id");
  const int64_t train_step = cpu.Event("train_step");
  const int64_t jit = cpu.Event("jit_train_step");
  xp::XStat* ms = cpu.EventMetadata(jit).add_stats();
  ms->set_metadata_id(hlo_module);
  ms->set_ref_value(static_cast<uint64_t>(module_name));
  const int64_t pjit = cpu.Event("PjitFunction");
  const int64_t execute = cpu.Event("ExecuteHelper");
  const int64_t record = cpu.Event("ThreadpoolListener::Record");

  xp::XLine* py = cpu.Line(100, "python3", t);
  for (int s = 0; s < 3; ++s) {
    const int64_t base = s * 10'000'000;  // ps
    xp::XEvent* e = AddEvent(py, train_step, base, 9'000'000);
    AddStat(e, step_num)->set_int64_value(s);
    AddStat(e, root)->set_int64_value(1);
    AddStat(e, group)->set_int64_value(s);
    e = AddEvent(py, pjit, base + 500'500, 4'000'000);
    AddStat(e, program_id)->set_uint64_value(42);
    AddStat(e, flops)->set_double_value(1.5e9);
    e = AddEvent(py, execute, base + 1'500'500, 2'000'000);
    AddStat(e, tf_op)->set_str_value("jit(train_step)/dot");
    AddStat(e, payload)->set_bytes_value(std::string("\x01\x02\x03", 3));
  }
  xp::XLine* eigen = cpu.Line(200, "tf_XLAEigen", t + 1'000);
  AddStat(AddEvent(eigen, jit, 0, 3'000'000), correlation)->set_int64_value(7);
  xp::XEvent* agg = eigen->add_events();
  agg->set_metadata_id(record);
  agg->set_num_occurrences(12);
  agg->set_duration_ps(100'000);

  Plane tpu(space.add_planes());
  tpu.p_->set_id(1);
  tpu.p_->set_name("/device:TPU:0");
  const int64_t dev_group = tpu.Stat("group_id");
  const int64_t module = tpu.Event("jit_train_step(123)");
  const int64_t fusion = tpu.Event("fusion.1");
  const int64_t dot = tpu.Event("dot.2");
  int64_t step_names[3];
  for (int s = 0; s < 3; ++s) step_names[s] = tpu.Event(std::to_string(s));
  xp::XLine* modules = tpu.Line(1, "XLA Modules", t + 2'000);
  xp::XLine* ops = tpu.Line(2, "XLA Ops", t + 2'000);
  xp::XLine* steps = tpu.Line(3, "Steps", t + 2'000);
  for (int s = 0; s < 3; ++s) {
    const int64_t base = s * 10'000'000;
    AddStat(AddEvent(modules, module, base, 8'000'000), dev_group)
        ->set_int64_value(s);
    AddEvent(ops, fusion, base, 3'000'000);
    AddEvent(ops, dot, base + 3'000'000, 4'000'000);
    AddStat(AddEvent(steps, step_names[s], base, 9'000'000), dev_group)
        ->set_int64_value(s);
  }

  Plane meta(space.add_planes());
  meta.p_->set_id(2);
  meta.p_->set_name("/host:metadata");
  return space;
}

JaxRun WriteJaxRun(const std::filesystem::path& logdir) {
  JaxRun run;
  run.logdir = logdir;
  run.run_dir = logdir / "plugins" / "profile" / "run1";
  std::filesystem::create_directories(run.run_dir);
  for (int h = 0; h < 2; ++h) {
    const auto path =
        run.run_dir / ("worker-" + std::to_string(h) + ".xplane.pb");
    std::ofstream out(path, std::ios::binary);
    JaxLikeXSpace(h).SerializeToOstream(&out);
    run.files.push_back(path);
  }
  return run;
}

}  // namespace podscope::trace_format::testing
