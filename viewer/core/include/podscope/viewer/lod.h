// Level-of-detail queries: what to draw of a track for a time window drawn
// `pixels` wide, in O(pixels * log n) per depth however many events the
// window holds.
//
// Pixel p covers [t0 + ceil(p * span / pixels), t0 + ceil((p + 1) * span /
// pixels)) with span = t1 - t0. A slice covers [start, max(end, start + 1)).
#ifndef PODSCOPE_VIEWER_LOD_H_
#define PODSCOPE_VIEWER_LOD_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "podscope/viewer/slice_columns.h"
#include "podscope/viewer/trace_store.h"

namespace podscope::viewer {

struct VisibleSlice {
  uint32_t index = 0;  // in the track's SliceColumns
  uint32_t depth = 0;
  int64_t start_ns = 0;
  int64_t duration_ns = 0;
  StringId name = 0;
  // Narrower than a pixel: it stands for every slice of its depth in the
  // pixel(s) it is the longest of.
  bool representative = false;
};

// Every slice of the window at least one pixel wide (duration * pixels >=
// t1 - t0), and for each pixel and depth the longest slice touching that
// pixel, each slice once, ordered by depth then start. Empty when
// t1 <= t0 or pixels == 0. With `busy`, it is sized to the depths and
// (*busy)[d] is QueryBusy of each depth d that has a slice narrower than a
// pixel in the result (empty for the others), computed while the depth's
// slices are still in cache.
std::vector<VisibleSlice> QuerySlices(
    const SliceColumns& slices, int64_t t0, int64_t t1, uint32_t pixels,
    std::vector<std::vector<float>>* busy = nullptr);

namespace internal {
struct DepthScratch;
}  // namespace internal

// The buffers a slice query works in. Kept from query to query (a painting
// thread keeps one), a query allocates nothing once they have grown, and
// after Reserve a query of up to `pixels` touches no memory it has not
// touched before.
class SliceQueryScratch {
 public:
  SliceQueryScratch();
  ~SliceQueryScratch();
  SliceQueryScratch(SliceQueryScratch&&) noexcept;
  SliceQueryScratch& operator=(SliceQueryScratch&&) noexcept;
  void Reserve(uint32_t pixels);

 private:
  friend void QuerySlicesInto(const SliceColumns&, int64_t, int64_t, uint32_t,
                              SliceQueryScratch*, std::vector<VisibleSlice>*,
                              std::vector<std::vector<float>>*);
  std::unique_ptr<internal::DepthScratch> s_;
};

// QuerySlices into `out` and `busy` (their contents replaced, their room
// kept), working in `scratch`.
void QuerySlicesInto(const SliceColumns& slices, int64_t t0, int64_t t1,
                     uint32_t pixels, SliceQueryScratch* scratch,
                     std::vector<VisibleSlice>* out,
                     std::vector<std::vector<float>>* busy = nullptr);

// Room in `out` for `pixels` slices of each of `depths` depths, and in
// `busy` for a share per pixel of each, with every page of it written
// once: what a zoomed-out query of that many depths returns, made ready
// before the frame that needs it.
void ReserveSliceQuery(uint32_t pixels, uint32_t depths,
                       std::vector<VisibleSlice>* out,
                       std::vector<std::vector<float>>* busy);

inline std::vector<VisibleSlice> QuerySlices(const TraceStore& store,
                                             TrackId track, int64_t t0,
                                             int64_t t1, uint32_t pixels) {
  return QuerySlices(store.data(track).slices, t0, t1, pixels);
}

// How busy one depth of a track is in each pixel: the share of the pixel's
// time the depth's slices cover (each slice covering [start, max(end,
// start + 1))), in [0, 1], one entry per pixel (0 for a pixel of no time,
// when the window is shorter than `pixels` ns). The slices of a depth do
// not overlap, so this is exact; where a relaid track's lanes would
// overlap, a pixel's share is capped at 1. O(pixels + slices' starts in
// the window, bounded by pixels * log n) from the running totals of
// covered time (SliceColumns::CoveredBefore), reading at most 32 slices
// per pixel. Empty when t1 <= t0, pixels == 0 or depth is out of range.
std::vector<float> QueryBusy(const SliceColumns& slices, uint32_t depth,
                             int64_t t0, int64_t t1, uint32_t pixels);

// A counter downsampled to one entry per pixel that holds samples.
struct CounterPixel {
  uint32_t pixel = 0;
  uint32_t count = 0;       // samples in the pixel
  uint32_t last_index = 0;  // of the pixel's last sample
  double min = 0;
  double max = 0;
  double last = 0;
};
struct CounterView {
  // The value in force at t0 (the last sample before the window).
  bool has_before = false;
  double before = 0;
  std::vector<CounterPixel> pixels;
};
CounterView QueryCounter(const CounterColumns& counter, int64_t t0, int64_t t1,
                         uint32_t pixels);

// Instants: the first of each pixel that holds any, with how many.
struct VisibleInstant {
  uint32_t index = 0;
  uint32_t pixel = 0;
  uint32_t count = 0;
  int64_t ts_ns = 0;
  StringId name = 0;
};
std::vector<VisibleInstant> QueryInstants(const InstantColumns& instants,
                                          int64_t t0, int64_t t1,
                                          uint32_t pixels);

// Maps times to pixels exactly (integer arithmetic).
class PixelGrid {
 public:
  PixelGrid(int64_t t0, int64_t t1, uint32_t pixels)
      : t0_(t0),
        span_(static_cast<__int128>(t1) - t0),
        pixels_(pixels),
        // span * pixels fits in 64 bits (any window shorter than ~50 days
        // at 4K pixels): the same integer results without 128-bit
        // division.
        narrow_(pixels > 0 && span_ > 0 &&
                span_ <= static_cast<__int128>((UINT64_MAX - pixels) / pixels)),
        span64_(static_cast<uint64_t>(span_)) {}
  uint32_t pixels() const { return pixels_; }
  // The first time of pixel p (p may be `pixels`: the window's end).
  int64_t Bound(uint32_t p) const {
    if (narrow_ && p <= pixels_) [[likely]] {
      const uint64_t num = uint64_t{p} * span64_;
      return static_cast<int64_t>(static_cast<uint64_t>(t0_) +
                                  (num + pixels_ - 1) / pixels_);
    }
    const __int128 num = static_cast<__int128>(p) * span_;
    return static_cast<int64_t>(t0_ + (num + pixels_ - 1) / pixels_);
  }
  // The pixel of a time inside the window.
  uint32_t PixelOf(int64_t t) const {
    const __int128 off = static_cast<__int128>(t) - t0_;
    if (off <= 0) return 0;
    if (off >= span_) return pixels_ - 1;
    if (narrow_) [[likely]] {
      return static_cast<uint32_t>(static_cast<uint64_t>(off) * pixels_ /
                                   span64_);
    }
    const __int128 p = off * pixels_ / span_;
    return p >= pixels_ ? pixels_ - 1 : static_cast<uint32_t>(p);
  }
  bool Wide(int64_t duration_ns) const {
    return static_cast<__int128>(duration_ns) * pixels_ >= span_;
  }

 private:
  int64_t t0_;
  __int128 span_;
  uint32_t pixels_;
  bool narrow_;
  uint64_t span64_;
};

}  // namespace podscope::viewer

#endif  // PODSCOPE_VIEWER_LOD_H_
