#include "podscope/trace_format/host_alignment.h"

#include <algorithm>
#include <cstdlib>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

namespace podscope::trace_format {
namespace {

int64_t Median(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  if (n % 2 == 1) return v[n / 2];
  return v[n / 2 - 1] + (v[n / 2] - v[n / 2 - 1]) / 2;
}

bool RpcUsable(const AlignInput& h) {
  return h.has_rpc && h.rpc_lo_ns <= h.rpc_hi_ns;
}

HostAlignment Wallclock(const AlignInput& h, std::string note) {
  HostAlignment a;
  a.method = AlignMethod::kWallclock;
  a.offset_ns = h.wallclock_offset_ns;
  a.note = std::move(note);
  return a;
}

HostAlignment Rpc(const AlignInput& h) {
  if (!h.has_rpc) return Wallclock(h, "no Profile call times");
  if (!RpcUsable(h)) {
    return Wallclock(h,
                     "the trace spans longer than the Profile call, so the "
                     "call's times bound nothing");
  }
  HostAlignment a;
  a.method = AlignMethod::kRpc;
  a.offset_ns = h.rpc_lo_ns + (h.rpc_hi_ns - h.rpc_lo_ns) / 2;
  a.uncertainty_ns = (h.rpc_hi_ns - h.rpc_lo_ns + 1) / 2;
  a.relative_uncertainty_ns = a.uncertainty_ns;
  return a;
}

// One host's offset to the reference host from the collectives both saw.
struct RelativeFit {
  int64_t offset_ns = 0;
  int64_t uncertainty_ns = 0;
  int used = 0;
};

RelativeFit FitRelative(const std::vector<int64_t>& diffs, int64_t skew_ns) {
  const int64_t first = Median(diffs);
  std::vector<int64_t> deviation;
  deviation.reserve(diffs.size());
  for (int64_t d : diffs) deviation.push_back(std::llabs(d - first));
  // Outliers (a collective one host waited out, a key that matched the
  // wrong op) are those far beyond the spread of the rest.
  const int64_t mad = Median(deviation);
  const int64_t limit = mad > INT64_MAX / 8
                            ? INT64_MAX
                            : std::max<int64_t>(mad * 15 / 2, 4 * skew_ns);
  std::vector<int64_t> inliers;
  for (int64_t d : diffs) {
    if (std::llabs(d - first) <= limit) inliers.push_back(d);
  }
  RelativeFit fit;
  fit.offset_ns = Median(inliers);
  int64_t worst = 0;
  for (int64_t d : inliers) {
    worst = std::max<int64_t>(worst, std::llabs(d - fit.offset_ns));
  }
  // Each end may be skew_ns off the common instant, so a difference may be
  // twice that off even when the residuals look smaller.
  fit.uncertainty_ns = std::max(worst, 2 * skew_ns);
  fit.used = static_cast<int>(inliers.size());
  return fit;
}

// The collective fit over `hosts` (indices into `in`); empty with
// `*why` set when it cannot be made.
std::vector<HostAlignment> FitCollectives(const std::vector<AlignInput>& in,
                                          const std::vector<size_t>& hosts,
                                          const AlignOptions& options,
                                          std::string* why) {
  if (hosts.size() < 2) {
    *why = options.anchor_on_first_host
               ? "fewer than two hosts with collectives"
               : "fewer than two hosts with collectives and Profile call "
                 "times";
    return {};
  }
  absl::flat_hash_map<std::string_view, int> seen;
  for (size_t h : hosts) {
    absl::flat_hash_map<std::string_view, bool> once;
    for (const auto& [key, end] : in[h].collective_ends) {
      if (once.emplace(key, true).second) ++seen[key];
    }
  }
  const AlignInput& ref = in[hosts[0]];
  absl::flat_hash_map<std::string_view, int64_t> ref_end;
  for (const auto& [key, end] : ref.collective_ends) {
    auto it = seen.find(key);
    if (it != seen.end() && it->second == static_cast<int>(hosts.size())) {
      ref_end.emplace(key, end);
    }
  }
  if (static_cast<int>(ref_end.size()) < options.min_collectives) {
    *why = absl::StrCat(ref_end.size(),
                        " collectives were seen on every host; the fit needs ",
                        options.min_collectives);
    return {};
  }
  std::vector<RelativeFit> fits;
  for (size_t h : hosts) {
    std::vector<int64_t> diffs;
    absl::flat_hash_map<std::string_view, bool> once;
    for (const auto& [key, end] : in[h].collective_ends) {
      auto it = ref_end.find(key);
      if (it == ref_end.end() || !once.emplace(key, true).second) continue;
      diffs.push_back(it->second - end);
    }
    RelativeFit fit = FitRelative(diffs, options.collective_skew_ns);
    if (h == hosts[0]) fit = {0, 0, fit.used};
    if (fit.used < options.min_collectives) {
      *why = absl::StrCat("only ", fit.used,
                          " collectives of a host agree with the others");
      return {};
    }
    fits.push_back(fit);
  }
  if (options.max_uncertainty_ns > 0) {
    for (const RelativeFit& f : fits) {
      if (f.uncertainty_ns > options.max_uncertainty_ns) {
        *why = absl::StrCat("the collectives' ends disagree by up to ",
                            f.uncertainty_ns, " ns between hosts (more than ",
                            options.max_uncertainty_ns,
                            "): not the same collectives on every host?");
        return {};
      }
    }
  }
  if (options.anchor_on_first_host) {
    // The reference host's own clock is the reference.
    std::vector<HostAlignment> out;
    for (size_t i = 0; i < hosts.size(); ++i) {
      HostAlignment a;
      a.method = AlignMethod::kCollectives;
      a.offset_ns = fits[i].offset_ns;
      a.uncertainty_ns = fits[i].uncertainty_ns;
      a.relative_uncertainty_ns = fits[i].uncertainty_ns;
      a.collectives = fits[i].used;
      out.push_back(a);
    }
    return out;
  }
  // Every host's rpc interval, moved by its offset to the reference,
  // bounds the reference's own offset.
  // In 128 bits: the inputs are bounded (AlignInput), their sums are not.
  __int128 lo = INT64_MIN, hi = INT64_MAX;
  for (size_t i = 0; i < hosts.size(); ++i) {
    const AlignInput& h = in[hosts[i]];
    lo = std::max(
        lo, __int128{h.rpc_lo_ns} - fits[i].offset_ns - fits[i].uncertainty_ns);
    hi = std::min(
        hi, __int128{h.rpc_hi_ns} - fits[i].offset_ns + fits[i].uncertainty_ns);
  }
  const __int128 widest = INT64_MAX / 4;
  if (lo > hi || hi - lo > widest || lo < -widest || hi > widest) {
    *why =
        "the collective fit contradicts the Profile call times (collectives "
        "that do not end together?)";
    return {};
  }
  const int64_t anchor = static_cast<int64_t>(lo + (hi - lo) / 2);
  const int64_t anchor_uncertainty = static_cast<int64_t>((hi - lo + 1) / 2);
  std::vector<HostAlignment> out;
  for (size_t i = 0; i < hosts.size(); ++i) {
    HostAlignment a;
    a.method = AlignMethod::kCollectives;
    a.offset_ns = anchor + fits[i].offset_ns;
    a.uncertainty_ns = anchor_uncertainty + fits[i].uncertainty_ns;
    a.relative_uncertainty_ns = fits[i].uncertainty_ns;
    a.collectives = fits[i].used;
    out.push_back(a);
  }
  return out;
}

}  // namespace

std::string_view AlignMethodName(AlignMethod m) {
  switch (m) {
    case AlignMethod::kBest:
      return "best";
    case AlignMethod::kWallclock:
      return "wallclock";
    case AlignMethod::kRpc:
      return "rpc";
    case AlignMethod::kCollectives:
      return "collectives";
  }
  return "?";
}

absl::StatusOr<AlignMethod> ParseAlignMethod(std::string_view name) {
  const absl::string_view typed(name.data(), name.size());
  for (AlignMethod m : {AlignMethod::kBest, AlignMethod::kWallclock,
                        AlignMethod::kRpc, AlignMethod::kCollectives}) {
    if (name == AlignMethodName(m)) return m;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("--align must be one of wallclock, rpc, collectives, best; "
                   "not '",
                   typed, "'"));
}

std::vector<HostAlignment> AlignHosts(const std::vector<AlignInput>& hosts,
                                      const AlignOptions& options) {
  std::vector<HostAlignment> out;
  out.reserve(hosts.size());
  for (const AlignInput& h : hosts) {
    out.push_back(options.method == AlignMethod::kWallclock ? Wallclock(h, "")
                                                            : Rpc(h));
  }
  if (options.method == AlignMethod::kWallclock ||
      options.method == AlignMethod::kRpc) {
    return out;
  }
  std::vector<size_t> fitted;
  for (size_t i = 0; i < hosts.size(); ++i) {
    if ((options.anchor_on_first_host || RpcUsable(hosts[i])) &&
        !hosts[i].collective_ends.empty()) {
      fitted.push_back(i);
    }
  }
  std::string why;
  std::vector<HostAlignment> fit = FitCollectives(hosts, fitted, options, &why);
  if (fit.empty()) {
    for (HostAlignment& a : out) {
      if (a.note.empty()) a.note = "no collective fit: " + why;
    }
    return out;
  }
  for (size_t i = 0; i < fitted.size(); ++i) out[fitted[i]] = fit[i];
  for (HostAlignment& a : out) {
    if (a.method != AlignMethod::kCollectives && a.note.empty()) {
      a.note = "no collectives seen on this host";
    }
  }
  return out;
}

std::vector<proto::ClockOffset> AlignImportedHosts(
    const std::vector<AlignInput>& hosts, const std::string& reference) {
  if (hosts.size() < 2) return {};
  AlignOptions options;
  options.method = AlignMethod::kCollectives;
  options.anchor_on_first_host = true;
  options.max_uncertainty_ns = kMaxImportAlignUncertaintyNs;
  const std::vector<HostAlignment> fit = AlignHosts(hosts, options);
  std::vector<proto::ClockOffset> out(fit.size());
  for (size_t i = 0; i < fit.size(); ++i) {
    if (fit[i].method != AlignMethod::kCollectives) return {};
    out[i].set_local_monotonic_ns(0);
    out[i].set_offset_ns(fit[i].offset_ns);
    out[i].set_uncertainty_ns(fit[i].uncertainty_ns);
    out[i].set_reference(reference);
  }
  return out;
}

}  // namespace podscope::trace_format
