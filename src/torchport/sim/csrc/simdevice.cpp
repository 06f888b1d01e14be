// torchport's simulated accelerator: PyTorch's PrivateUse1 device backed by host memory.
//
// Owns what a PyTorch backend must own (allocator, device guard with streams and timed events,
// hooks with generators and pinned memory, the kernels that create, copy and view tensors,
// convolution_overrideable) and runs every other operator on the host, after checking it against the
// target's operator list and the devices of its arguments as its generated wrapper would: an operator
// the target lacks does what the vendor does (warn and run on the CPU, counted, or raise; the mode and
// texts are set from Python).  Sparse COO tensors get the kernels the target lists.  Autocast for the
// device applies the vendor's own op lists, set from Python.  Numerics are the CPU's; nothing here is
// timed like a device.
#include <torch/extension.h>

#include <ATen/EmptyTensor.h>
#include <ATen/autocast_mode.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <ATen/native/CPUFallback.h>
#include <ATen/core/op_registration/adaption.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/_coalesced_native.h>
#include <ATen/ops/_indices_native.h>
#include <ATen/ops/_nnz_native.h>
#include <ATen/ops/_sparse_coo_tensor_with_dims_and_tensors_native.h>
#include <ATen/ops/_values_native.h>
#include <ATen/ops/dense_dim_native.h>
#include <ATen/ops/indices_native.h>
#include <ATen/ops/is_coalesced_native.h>
#include <ATen/ops/sparse_dim_native.h>
#include <ATen/ops/values_native.h>
#include <ATen/ops/as_strided_cpu_dispatch.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/core/impl/alloc_cpu.h>

#include <atomic>
#include <bitset>
#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <tuple>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <unordered_set>

namespace {

constexpr int kMaxDevices = 16;
constexpr c10::DeviceType kDev = c10::DeviceType::PrivateUse1;

// ---- configuration, set from Python before first use -------------------------------------------
std::atomic<int> g_device_count{1};
std::atomic<int64_t> g_capacity{int64_t(32) << 30};
std::string g_label = "NPU";            // how the vendor names the device in error messages
std::atomic<bool> g_rng_per_device{false};

// ---- memory: a model of the vendor's caching allocator ------------------------------------------
// The vendors' allocators are PyTorch's CUDA caching allocator adapted; the sizes come from the target's
// data (kb/sim/chips.toml [<target>.allocator], with their sources).  As there: a request is padded and
// rounded up to a block; the pool is small for blocks up to small_size, else large; a block is the best fit
// among the pool's free blocks (the smallest that is large enough), split when the rest is at least
// min_block (small pool) or more than small_size (large pool), else used whole; without one, the device
// reserves a segment (small_segment; large_segment below min_large_alloc; else the block rounded to
// round_large); a freed block merges with its free neighbours and stays reserved; empty_cache() releases
// the segments with no block in use, and so does a request that would pass the capacity, before it fails.
// Not modelled: streams (one pool per device, not per stream), expandable segments, max_split_size and
// the other PYTORCH_*_ALLOC_CONF settings, graph pools.  The memory itself is host memory of the exact size
// requested; addresses in memory_snapshot() are the model's own.
struct AllocatorSizes {
  int64_t pad = 0, min_block = 512, small_size = 1 << 20, small_segment = 2 << 20, min_large_alloc = 10 << 20,
          large_segment = 20 << 20, round_large = 2 << 20;
};
AllocatorSizes g_sizes;

struct ModelBlock {          // a block of a segment, by its offset there
  int64_t size = 0, requested = 0;
  bool allocated = false;
};
struct Segment {
  int pool = 0;              // 0 small, 1 large
  int64_t size = 0, address = 0;
  std::map<int64_t, ModelBlock> blocks;   // offset -> block; they tile the segment
};

struct DeviceMemory {
  int64_t allocated = 0, peak = 0, reserved = 0, reserved_peak = 0, allocations = 0, frees = 0, oom = 0,
          retries = 0, segments_made = 0, limit = -1;   // limit: set_per_process_memory_fraction (-1: capacity)
  std::map<int64_t, Segment> segments;                   // by id
  std::set<std::tuple<int64_t, int64_t, int64_t>> free[2];   // per pool: (size, segment, offset) of free blocks
};
DeviceMemory g_memory[kMaxDevices];
std::mutex g_memory_lock;
int64_t g_next_segment = 1, g_next_address = int64_t(1) << 32;

thread_local int t_device = 0;

int checked_index(c10::DeviceIndex index) {
  int i = index < 0 ? t_device : index;
  TORCH_CHECK(i < g_device_count.load(), g_label, " error: invalid device ordinal ", i, " (the simulated ",
              g_label, " has ", g_device_count.load(), " device(s); set them with --devices)");
  return i;
}

struct Block {               // what a DataPtr of the device holds
  void* ptr;
  int device;
  int64_t segment, offset;
};

std::string human(int64_t n) {
  char buf[64];
  snprintf(buf, sizeof buf, "%.2f GiB", double(n) / double(int64_t(1) << 30));
  return buf;
}

int64_t round_up(int64_t n, int64_t unit) { return unit * ((n + unit - 1) / unit); }

int64_t block_size(int64_t n) {   // round_size: padded, then a multiple of the minimum block
  int64_t padded = n + g_sizes.pad;
  return padded < g_sizes.min_block ? g_sizes.min_block : round_up(padded, g_sizes.min_block);
}

int64_t segment_size(int64_t block) {   // get_allocation_size
  if (block <= g_sizes.small_size) return g_sizes.small_segment;
  if (block < g_sizes.min_large_alloc) return g_sizes.large_segment;
  return round_up(block, g_sizes.round_large);
}

int64_t release_free_segments(DeviceMemory& m) {   // empty_cache: segments no block uses go back to the device
  int64_t released = 0;
  for (auto it = m.segments.begin(); it != m.segments.end();) {
    const auto& blocks = it->second.blocks;
    if (blocks.size() == 1 && !blocks.begin()->second.allocated) {
      released += it->second.size;
      m.free[it->second.pool].erase({it->second.size, it->first, 0});
      it = m.segments.erase(it);
    } else {
      ++it;
    }
  }
  m.reserved -= released;
  return released;
}

// Find (or reserve) a block of `block` bytes for a request of `requested` bytes (under g_memory_lock):
// {segment id, offset}, or segment 0 when the device is out of memory.
std::pair<int64_t, int64_t> take_block(DeviceMemory& m, int64_t block, int64_t requested) {
  int pool = block <= g_sizes.small_size ? 0 : 1;
  int64_t best_segment = 0, best_offset = 0;
  auto fit = m.free[pool].lower_bound({block, 0, 0});   // the smallest free block that is large enough
  if (fit != m.free[pool].end()) {
    best_segment = std::get<1>(*fit), best_offset = std::get<2>(*fit);
    m.free[pool].erase(fit);
  }
  if (best_segment == 0) {
    int64_t size = segment_size(block);
    int64_t limit = m.limit >= 0 ? m.limit : g_capacity.load();
    if (m.reserved + size > limit && release_free_segments(m) > 0) m.retries++;
    if (m.reserved + size > limit) return {0, 0};
    Segment seg;
    seg.pool = pool, seg.size = size, seg.address = g_next_address;
    g_next_address += round_up(size, int64_t(2) << 20);
    seg.blocks[0] = ModelBlock{size, 0, false};
    best_segment = g_next_segment++, best_offset = 0;   // taken at once: never in the free set
    m.segments.emplace(best_segment, std::move(seg));
    m.reserved += size;
    m.segments_made++;
    m.reserved_peak = std::max(m.reserved_peak, m.reserved);
  }
  Segment& seg = m.segments.at(best_segment);
  ModelBlock& b = seg.blocks.at(best_offset);
  int64_t rest = b.size - block;
  bool split = pool == 0 ? rest >= g_sizes.min_block : rest > g_sizes.small_size;   // should_split
  if (split) {
    b.size = block;
    seg.blocks[best_offset + block] = ModelBlock{rest, 0, false};
    m.free[pool].insert({rest, best_segment, best_offset + block});
  }
  b.allocated = true;
  b.requested = requested;
  m.allocated += b.size;
  m.peak = std::max(m.peak, m.allocated);
  m.allocations++;
  return {best_segment, best_offset};
}

void free_block(DeviceMemory& m, int64_t segment, int64_t offset) {   // free_block, with merges
  Segment& seg = m.segments.at(segment);
  auto& blocks = seg.blocks;
  auto& free = m.free[seg.pool];
  auto it = blocks.find(offset);
  it->second.allocated = false;
  m.allocated -= it->second.size;
  m.frees++;
  auto next = std::next(it);
  if (next != blocks.end() && !next->second.allocated) {
    free.erase({next->second.size, segment, next->first});
    it->second.size += next->second.size;
    blocks.erase(next);
  }
  if (it != blocks.begin() && !std::prev(it)->second.allocated) {
    auto prev = std::prev(it);
    free.erase({prev->second.size, segment, prev->first});
    prev->second.size += it->second.size;
    blocks.erase(it);
    it = prev;
  }
  free.insert({it->second.size, segment, it->first});
}

struct SimAllocator final : at::Allocator {
  at::DataPtr allocate(size_t n) override {
    int dev = t_device;
    if (n == 0) return {nullptr, nullptr, &release, c10::Device(kDev, static_cast<c10::DeviceIndex>(dev))};
    int64_t block = block_size(int64_t(n));
    DeviceMemory& m = g_memory[dev];
    std::pair<int64_t, int64_t> where;
    {
      std::lock_guard<std::mutex> lock(g_memory_lock);
      where = take_block(m, block, int64_t(n));
      if (where.first == 0) {
        m.oom++;
        int64_t allocated = m.allocated, reserved = m.reserved, limit = m.limit;
        TORCH_CHECK_WITH(OutOfMemoryError, false, g_label, " out of memory. Tried to allocate ", human(block),
                         " (simulated device ", dev, "; ", human(g_capacity.load()), " total capacity; ",
                         human(allocated), " already allocated; ", human(reserved),
                         " reserved in total by the simulated caching allocator",
                         limit >= 0 ? "; limited by set_per_process_memory_fraction to " + human(limit) : std::string(),
                         ")");
      }
    }
    void* p = c10::alloc_cpu(n);
    auto* b = new Block{p, dev, where.first, where.second};
    return {p, b, &release, c10::Device(kDev, static_cast<c10::DeviceIndex>(dev))};
  }
  static void release(void* ctx) {
    auto* b = static_cast<Block*>(ctx);
    if (b == nullptr) return;
    {
      std::lock_guard<std::mutex> lock(g_memory_lock);
      free_block(g_memory[b->device], b->segment, b->offset);
    }
    c10::free_cpu(b->ptr);
    delete b;
  }
  at::DeleterFnPtr raw_deleter() const override { return nullptr; }
  void copy_data(void* dst, const void* src, std::size_t count) const override { std::memcpy(dst, src, count); }
};
SimAllocator g_allocator;
REGISTER_ALLOCATOR(c10::DeviceType::PrivateUse1, &g_allocator);

// Pinned host memory: ordinary host memory, remembered so is_pinned() answers truthfully.
std::mutex g_pinned_lock;
std::unordered_set<const void*> g_pinned;
struct PinnedAllocator final : at::Allocator {
  at::DataPtr allocate(size_t n) override {
    void* p = c10::alloc_cpu(n ? n : 1);
    {
      std::lock_guard<std::mutex> lock(g_pinned_lock);
      g_pinned.insert(p);
    }
    return {p, p, &release, c10::Device(c10::DeviceType::CPU)};
  }
  static void release(void* p) {
    {
      std::lock_guard<std::mutex> lock(g_pinned_lock);
      g_pinned.erase(p);
    }
    c10::free_cpu(p);
  }
  at::DeleterFnPtr raw_deleter() const override { return &release; }
  void copy_data(void* dst, const void* src, std::size_t count) const override { std::memcpy(dst, src, count); }
};
PinnedAllocator g_pinned_allocator;

// ---- streams and events -------------------------------------------------------------------------
// Work runs synchronously, so every stream is always idle; streams keep their identity and
// events record host time so that elapsed_time measures what ran between them.
std::atomic<int64_t> g_next_stream{1};
thread_local int64_t t_stream[kMaxDevices] = {0};

struct SimEvent {
  double ms = 0;
  bool recorded = false;
};

double now_ms() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

struct SimGuard final : c10::impl::DeviceGuardImplInterface {
  c10::DeviceType type() const override { return kDev; }
  c10::Device exchangeDevice(c10::Device d) const override {
    auto old = getDevice();
    setDevice(d);
    return old;
  }
  c10::Device getDevice() const override { return c10::Device(kDev, static_cast<c10::DeviceIndex>(t_device)); }
  void setDevice(c10::Device d) const override { t_device = checked_index(d.index()); }
  void uncheckedSetDevice(c10::Device d) const noexcept override {
    if (d.index() >= 0 && d.index() < kMaxDevices) t_device = d.index();
  }
  c10::Stream getStream(c10::Device d) const noexcept override {
    int i = d.index() < 0 ? t_device : d.index();
    return c10::Stream(c10::Stream::UNSAFE, c10::Device(kDev, static_cast<c10::DeviceIndex>(i)), t_stream[i]);
  }
  c10::Stream getDefaultStream(c10::Device d) const override {
    return c10::Stream(c10::Stream::UNSAFE, c10::Device(kDev, static_cast<c10::DeviceIndex>(checked_index(d.index()))), 0);
  }
  c10::Stream getStreamFromGlobalPool(c10::Device d, bool) const override { return getNewStream(d, 0); }
  c10::Stream getNewStream(c10::Device d, int) const override {
    return c10::Stream(c10::Stream::UNSAFE, c10::Device(kDev, static_cast<c10::DeviceIndex>(checked_index(d.index()))),
                       g_next_stream++);
  }
  c10::Stream exchangeStream(c10::Stream s) const noexcept override {
    int i = s.device_index() < 0 ? t_device : s.device_index();
    auto old = c10::Stream(c10::Stream::UNSAFE, c10::Device(kDev, static_cast<c10::DeviceIndex>(i)), t_stream[i]);
    t_stream[i] = s.id();
    return old;
  }
  c10::DeviceIndex deviceCount() const noexcept override { return static_cast<c10::DeviceIndex>(g_device_count.load()); }
  void record(void** event, const c10::Stream&, const c10::DeviceIndex, const c10::EventFlag) const override {
    if (*event == nullptr) *event = new SimEvent();
    auto* e = static_cast<SimEvent*>(*event);
    e->ms = now_ms();
    e->recorded = true;
  }
  void block(void*, const c10::Stream&) const override {}
  bool queryEvent(void*) const override { return true; }
  void destroyEvent(void* event, const c10::DeviceIndex) const noexcept override { delete static_cast<SimEvent*>(event); }
  bool queryStream(const c10::Stream&) const override { return true; }
  void synchronizeStream(const c10::Stream&) const override {}
  void synchronizeEvent(void*) const override {}
  void synchronizeDevice(const c10::DeviceIndex) const override {}
  void recordDataPtrOnStream(const c10::DataPtr&, const c10::Stream&) const override {}
  double elapsedTime(void* a, void* b, const c10::DeviceIndex) const override {
    TORCH_CHECK(a && b && static_cast<SimEvent*>(a)->recorded && static_cast<SimEvent*>(b)->recorded,
                "Both events must be recorded before calculating elapsed time.");
    return static_cast<SimEvent*>(b)->ms - static_cast<SimEvent*>(a)->ms;
  }
};
C10_REGISTER_GUARD_IMPL(PrivateUse1, SimGuard);

// ---- generators ----------------------------------------------------------------------------------
// "host" mode: the device draws from the host's default generator, so a converted program draws the
// same numbers as its cpu conversion.  "device" mode: one generator per device, as on hardware.
at::Generator& device_generator(int i) {
  static std::vector<at::Generator>* gens = [] {
    auto* v = new std::vector<at::Generator>();
    for (int d = 0; d < kMaxDevices; ++d) v->push_back(at::make_generator<at::CPUGeneratorImpl>(c10::default_rng_seed_val));
    return v;
  }();
  return (*gens)[i];
}

const at::Generator& generator_for(int i) {
  if (!g_rng_per_device.load()) return at::detail::getDefaultCPUGenerator();
  return device_generator(i);
}

struct SimHooks final : at::PrivateUse1HooksInterface {
  bool isBuilt() const override { return true; }
  bool isAvailable() const override { return true; }
  bool hasPrimaryContext(c10::DeviceIndex) const override { return true; }
  const at::Generator& getDefaultGenerator(c10::DeviceIndex index) const override {
    return generator_for(checked_index(index));
  }
  at::Generator getNewGenerator(c10::DeviceIndex) const override {
    return at::make_generator<at::CPUGeneratorImpl>(c10::default_rng_seed_val);
  }
  at::Device getDeviceFromPtr(void*) const override { return c10::Device(kDev, static_cast<c10::DeviceIndex>(t_device)); }
  bool isPinnedPtr(const void* data) const override {
    std::lock_guard<std::mutex> lock(g_pinned_lock);
    return g_pinned.count(data) > 0;
  }
  at::Allocator* getPinnedMemoryAllocator() const override { return &g_pinned_allocator; }
  c10::DeviceIndex deviceCount() const override { return static_cast<c10::DeviceIndex>(g_device_count.load()); }
  void setCurrentDevice(c10::DeviceIndex d) const override { t_device = checked_index(d); }
  c10::DeviceIndex getCurrentDevice() const override { return static_cast<c10::DeviceIndex>(t_device); }
  c10::DeviceIndex exchangeDevice(c10::DeviceIndex d) const override {
    auto old = t_device;
    t_device = checked_index(d);
    return static_cast<c10::DeviceIndex>(old);
  }
  c10::DeviceIndex maybeExchangeDevice(c10::DeviceIndex d) const override { return exchangeDevice(d); }
  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t newsize) const override {
    auto* impl = storage.unsafeGetStorageImpl();
    at::DataPtr fresh = g_allocator.allocate(newsize);
    size_t keep = std::min(newsize, impl->nbytes());
    if (keep) std::memcpy(fresh.get(), impl->data(), keep);
    impl->set_data_ptr_noswap(std::move(fresh));
    impl->set_nbytes(newsize);
  }
};
SimHooks* g_hooks = new SimHooks();

// ---- kernels the backend owns -------------------------------------------------------------------
c10::DispatchKeySet device_keys() { return c10::DispatchKeySet(c10::DispatchKey::PrivateUse1); }

void select_device(std::optional<at::Device> device) {
  if (device && device->has_index()) t_device = checked_index(device->index());
}

at::Tensor empty_memory_format(c10::IntArrayRef size, std::optional<at::ScalarType> dtype, std::optional<at::Layout>,
                               std::optional<at::Device> device, std::optional<bool>,
                               std::optional<at::MemoryFormat> memory_format) {
  c10::DeviceGuard guard(device.value_or(c10::Device(kDev, static_cast<c10::DeviceIndex>(t_device))));
  return at::detail::empty_generic(size, &g_allocator, device_keys(), c10::dtype_or_default(dtype), memory_format);
}

at::Tensor empty_strided(c10::IntArrayRef size, c10::IntArrayRef stride, std::optional<at::ScalarType> dtype,
                         std::optional<at::Layout>, std::optional<at::Device> device, std::optional<bool>) {
  c10::DeviceGuard guard(device.value_or(c10::Device(kDev, static_cast<c10::DeviceIndex>(t_device))));
  return at::detail::empty_strided_generic(size, stride, &g_allocator, device_keys(), c10::dtype_or_default(dtype));
}

// The device's memory is host memory: a device tensor can be read and written through a CPU alias.
at::Tensor host_alias(const at::Tensor& t) {
  if (!t.defined() || !t.is_privateuseone()) return t;
  auto storage = t.storage();
  c10::Storage cpu_storage(c10::Storage::use_byte_size_t(), storage.nbytes(),
                           at::DataPtr(storage.mutable_data(), c10::Device(c10::DeviceType::CPU)),
                           c10::GetCPUAllocator(), true);   // resizable: an out= kernel may grow it (copied back)
  at::Tensor alias = at::empty({0}, t.options().device(c10::DeviceType::CPU));
  alias.set_(cpu_storage, t.storage_offset(), t.sizes(), t.strides());
  if (t.is_conj()) alias._set_conj(true);   // a lazy conjugate or negation reads as the device tensor does
  if (t.is_neg()) alias._set_neg(true);
  return alias;
}

// A target whose kernels hold 64-bit floating data as 32-bit (torch_mlu: kb/sim/chips.toml double_as_float): the
// data a host copy brings to the device, and every result of a device op, keep only 32-bit precision.
std::atomic<bool> g_double_as_float{false};
std::string g_double_warning;

void narrow_double(const at::Tensor& host) {
  if (!g_double_as_float.load() || !host.defined() || host.numel() == 0) return;
  if (host.scalar_type() == at::kDouble) host.copy_(host.to(at::kFloat));
  else if (host.scalar_type() == at::kComplexDouble) host.copy_(host.to(at::kComplexFloat));
}

at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool) {
  at::Tensor target = host_alias(dst);
  target.copy_(host_alias(self));
  if (g_double_as_float.load() && dst.is_privateuseone() && self.is_cpu() &&
      (self.scalar_type() == at::kDouble || self.scalar_type() == at::kComplexDouble)) {
    TORCH_WARN_ONCE(g_double_warning);
    narrow_double(target);
  }
  return dst;
}

at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst) {
  at::native::resize_(dst, self.sizes());
  return copy_from(self, dst, false);
}

at::Tensor as_strided(const at::Tensor& self, c10::IntArrayRef size, c10::IntArrayRef stride,
                      std::optional<int64_t> offset) {
  return at::cpu::as_strided_symint(self, c10::fromIntArrayRefSlow(size), c10::fromIntArrayRefSlow(stride),
                                    offset ? std::optional<c10::SymInt>(*offset) : std::nullopt);
}

const at::Tensor& resize_(const at::Tensor& self, c10::SymIntArrayRef size, std::optional<at::MemoryFormat> mf) {
  c10::DeviceGuard guard(self.device());
  return at::native::resize_(self, C10_AS_INTARRAYREF_SLOW(size), mf);
}

at::Tensor view(const at::Tensor& self, c10::SymIntArrayRef size) {
  return at::native::view(self, C10_AS_INTARRAYREF_SLOW(size));
}

at::Tensor reshape_alias(const at::Tensor& self, c10::SymIntArrayRef size, c10::SymIntArrayRef stride) {
  return at::native::_reshape_alias(self, C10_AS_INTARRAYREF_SLOW(size), C10_AS_INTARRAYREF_SLOW(stride));
}

at::Tensor& set_storage(at::Tensor& self, c10::Storage source) { return at::native::set_(self, source); }

at::Tensor& set_storage_offset(at::Tensor& self, c10::Storage source, int64_t offset, c10::IntArrayRef size,
                               c10::IntArrayRef stride) {
  return at::native::set_storage_cpu_(self, source, offset, size, stride);
}

at::Tensor& set_empty(at::Tensor& self) {
  c10::Storage empty(c10::Storage::use_byte_size_t(), 0, &g_allocator, true);
  return at::native::set_storage_cpu_(self, empty, 0, {0}, {});
}

at::Tensor& set_tensor(at::Tensor& self, const at::Tensor& source) {
  return at::native::set_storage_cpu_(self, source.storage(), source.storage_offset(), source.sizes(),
                                      source.strides());
}

at::Tensor to_device(const at::Tensor& cpu, c10::Device device) {
  if (!cpu.defined()) return cpu;
  c10::DeviceGuard guard(device);
  auto out = empty_strided(cpu.sizes(), cpu.strides(), cpu.scalar_type(), std::nullopt, std::nullopt, std::nullopt);
  at::Tensor host = host_alias(out);
  host.copy_(cpu);
  narrow_double(host);   // a device op's new result
  return out;
}

// The dtype limit of an op this file implements itself (defined with the limits, below).
void check_own_limit(const std::string& key, std::initializer_list<std::pair<const char*, const at::Tensor*>> args);

// The device check a vendor's convolution wrapper makes (ExactSame: input, weight and bias on one device).
void check_same_device(const char* op, std::initializer_list<std::pair<const char*, const at::Tensor*>> args) {
  std::optional<c10::Device> common;
  std::string method = "wrapper_" + g_label + "_" + op;
  for (const auto& [name, t] : args)
    if (t && t->defined()) c10::impl::check_and_update_common_device(common, *t, method.c_str(), name);
}

at::Tensor convolution(const at::Tensor& input, const at::Tensor& weight, const std::optional<at::Tensor>& bias,
                       c10::SymIntArrayRef stride, c10::SymIntArrayRef padding, c10::SymIntArrayRef dilation,
                       bool transposed, c10::SymIntArrayRef output_padding, c10::SymInt groups) {
  check_same_device("convolution_overrideable",
                    {{"input", &input}, {"weight", &weight}, {"bias", bias && bias->defined() ? &*bias : nullptr}});
  check_own_limit("convolution_overrideable", {{"input", &input}, {"weight", &weight}});
  std::optional<at::Tensor> b;
  if (bias && bias->defined()) b = host_alias(*bias);
  return to_device(at::convolution_symint(host_alias(input), host_alias(weight), b, stride, padding, dilation,
                                          transposed, output_padding, groups),
                   input.device());
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> convolution_backward(
    const at::Tensor& grad, const at::Tensor& input, const at::Tensor& weight, c10::SymIntArrayRef stride,
    c10::SymIntArrayRef padding, c10::SymIntArrayRef dilation, bool transposed, c10::SymIntArrayRef output_padding,
    c10::SymInt groups, std::array<bool, 3> mask) {
  check_same_device("convolution_backward_overrideable", {{"grad_output", &grad}, {"input", &input}, {"weight", &weight}});
  check_own_limit("convolution_backward_overrideable", {{"grad_output", &grad}, {"input", &input}, {"weight", &weight}});
  auto r = at::convolution_backward_symint(host_alias(grad), host_alias(input), host_alias(weight), std::nullopt,
                                           stride, padding, dilation, transposed, output_padding, groups, mask);
  auto d = input.device();
  return {to_device(std::get<0>(r), d), to_device(std::get<1>(r), d), to_device(std::get<2>(r), d)};
}

void record_stream(at::Tensor&, c10::Stream) {}  // memory is freed when the last reference goes: nothing to defer

// A lazily conjugated or negated source reaches the device copy as it is (the host copy resolves it): PyTorch's
// fallback for those bits would resolve it by a clone, which copies through _copy_from again, without end.
TORCH_LIBRARY_IMPL(aten, Conjugate, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}
TORCH_LIBRARY_IMPL(aten, Negative, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("empty.memory_format", empty_memory_format);
  m.impl("record_stream", record_stream);
  m.impl("empty_strided", empty_strided);
  m.impl("_copy_from", copy_from);
  m.impl("_copy_from_and_resize", copy_from_and_resize);
  m.impl("as_strided", as_strided);
  m.impl("resize_", resize_);
  m.impl("view", view);
  m.impl("_reshape_alias", reshape_alias);
  m.impl("set_.source_Storage", set_storage);
  m.impl("set_.source_Storage_storage_offset", set_storage_offset);
  m.impl("set_", set_empty);
  m.impl("set_.source_Tensor", set_tensor);
  m.impl("convolution_overrideable", convolution);
  m.impl("convolution_backward_overrideable", convolution_backward);
}

// ---- every other operator: the target's operator list decides ----------------------------------
// The ops the target implements get a PrivateUse1 kernel each (as the vendor registers its own), which
// runs PyTorch's CPU kernel on the host memory.  Composite ops then decompose exactly as they would on
// the vendor's device, and an op that reaches the backend fallback is one the target lacks: what happens
// then is the fallback mode, set from Python (the vendor's default, its off switch, or an option).
enum class Fallback { kRaise, kWarnAndRun, kVendorError };
bool g_check_ops = false;                     // false: no operator data, every op runs
Fallback g_fallback = Fallback::kRaise;
py::object* g_on_fallback = nullptr;          // Python callback(op name) for counting
std::string g_lacking_note;                   // why the simulated device raises, and what the hardware does
std::string g_fallback_text;                  // kWarnAndRun: the warning; kVendorError: the error ({op}: the op)
bool g_warn_per_overload = true;              // once per op with its overload, or once per op name
bool g_vendor_error_not_implemented = false;  // kVendorError raises NotImplementedError (else RuntimeError)
std::unordered_set<std::string> g_foreign_ops;   // ops of other namespaces the vendor registers (torchvision::nms)
std::unordered_set<std::string> g_no_check_ops;  // device_check: NoCheck in native_functions.yaml
std::unordered_set<std::string> g_warned;
std::mutex g_warned_lock;
// The kernels registered for the target's op list.  Never destroyed at exit (as PyTorch's own
// registrations): deregistering after the dispatcher's statics are gone aborts the process.
torch::Library* g_target_ops = nullptr;
std::mutex g_lend_lock;   // one lending at a time (the host generator's state is swapped)

void use_device_generator(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const auto& args = op.schema().arguments();
  size_t base = stack->size() - args.size();
  for (size_t i = 0; i < args.size(); ++i) {
    auto& slot = (*stack)[base + i];
    if (!slot.isNone()) continue;
    auto type = args[i].type();
    if (auto opt = type->cast<c10::OptionalType>()) type = opt->getElementType();
    if (type->kind() == c10::TypeKind::GeneratorType) slot = c10::IValue(device_generator(t_device));
  }
}

bool takes_generator(const c10::FunctionSchema& schema) {
  for (const auto& a : schema.arguments()) {
    auto type = a.type();
    if (auto opt = type->cast<c10::OptionalType>()) type = opt->getElementType();
    if (type->kind() == c10::TypeKind::GeneratorType) return true;
  }
  return false;
}

// A random op with no generator argument (native_dropout: every dropout) draws from the host's default generator
// inside its CPU kernel: in "device" mode the device's generator state is lent to it for the call and taken back,
// so dropout advances the device's generator, as on hardware, and not the host's.
struct LentGenerator {
  at::Generator host, device;
  at::Tensor host_state;
  LentGenerator(at::Generator host_gen, at::Generator device_gen) : host(std::move(host_gen)), device(std::move(device_gen)) {
    host_state = host.get_state();
    host.set_state(device.get_state());
  }
  ~LentGenerator() {
    device.set_state(host.get_state());
    host.set_state(host_state);
  }
};

std::string op_key(const c10::OperatorName& name) {   // "index.Tensor", "torchvision::nms"
  std::string base = name.name.rfind("aten::", 0) == 0 ? name.name.substr(6) : name.name;
  return base + (name.overload_name.empty() ? "" : "." + name.overload_name);
}

enum class DeviceCheck { kNone, kExactSame, kNoCheck };

// A `Tensor?[]` argument (index's indices): a typed list, or the generic list TorchScript builds for it
// (prim::ListConstruct's Optional[Tensor] type is not the C++ one, so isOptionalTensorList() says no).
std::optional<c10::List<std::optional<at::Tensor>>> optional_tensors(const c10::IValue& v) {
  if (v.isOptionalTensorList()) return v.toOptionalTensorList();
  if (!v.isList() || v.isTensorList()) return std::nullopt;
  const auto& items = v.toListRef();
  if (items.empty() || !(items[0].isTensor() || items[0].isNone())) return std::nullopt;   // int[] sizes and such
  c10::List<std::optional<at::Tensor>> out;
  for (const c10::IValue& e : items) {
    if (e.isTensor()) out.push_back(e.toTensor());
    else if (e.isNone()) out.push_back(std::nullopt);
    else return std::nullopt;
  }
  return out;
}

// The devices of an op's tensor arguments, checked as the codegen'd wrapper of a device kernel checks
// them (device_check in native_functions.yaml, which vendor codegens follow too): ExactSame checks every
// positional and out= tensor, 0-dim CPU ones included; NoCheck leaves it to the kernel, whose CUDA
// versions move CPU index lists to the device and take 0-dim CPU tensors as scalars (TensorIterator),
// so only those pass; kNone (the CPU fallback) takes anything.  Returns the device of the results.
std::optional<c10::Device> check_devices(const c10::OperatorHandle& op, torch::jit::Stack* stack, DeviceCheck mode) {
  const auto& args = op.schema().arguments();
  size_t base = stack->size() - args.size();
  std::optional<c10::Device> common, first_device;
  std::string method = "wrapper_" + g_label + "_" + op_key({op.schema().operator_name().name, ""});
  auto check = [&](const at::Tensor& t, const c10::Argument& arg, bool index_list) {
    if (!t.defined()) return;
    if (!first_device && t.is_privateuseone()) first_device = t.device();
    if (mode == DeviceCheck::kNone || (arg.kwarg_only() && !arg.is_out())) return;
    if (mode == DeviceCheck::kNoCheck && t.device().is_cpu() && (index_list || t.dim() == 0)) return;
    c10::impl::check_and_update_common_device(common, t, method.c_str(), arg.name().c_str());
  };
  for (size_t i = 0; i < args.size(); ++i) {
    const auto& v = (*stack)[base + i];
    if (v.isTensor()) {
      check(v.toTensor(), args[i], false);
    } else if (v.isTensorList()) {
      for (const at::Tensor& t : v.toTensorList()) check(t, args[i], false);
    } else if (auto list = optional_tensors(v)) {
      for (std::optional<at::Tensor> t : *list) if (t) check(*t, args[i], true);
    }
  }
  return common && common->is_privateuseone() ? common : first_device;
}

// A host kernel: the CPU kernel runs on CPU tensors that alias the device tensors' memory (no copies).
// In-place and out= arguments are therefore updated where they live, optional mutated arguments
// (batch norm's running statistics) included; a view comes back as a view of the device tensor; a
// new result becomes a device tensor; an out= argument the CPU kernel reallocated is copied back.
struct Aliased {
  at::Tensor device, host;
  bool written;
};

const void* data_of(const at::Tensor& t) { return t.storage().data_ptr().get(); }

c10::IValue on_device(const at::Tensor& t, const std::vector<Aliased>& args, std::optional<c10::Device> device) {
  if (!t.defined() || !t.device().is_cpu() || !device || !device->is_privateuseone()) return t;
  if (t.storage().nbytes() > 0) {
    for (const auto& a : args) {
      if (a.host.defined() && data_of(a.host) == data_of(t)) {   // a view of an argument
        if (a.written && t.is_same(a.host)) return a.device;
        if (t.scalar_type() != a.device.scalar_type()) {   // a view as another dtype (view_as_real, .real, .view(dtype))
          auto view = at::detail::make_tensor<c10::TensorImpl>(c10::Storage(a.device.storage()), a.device.key_set(),
                                                               t.dtype());
          view.unsafeGetTensorImpl()->set_sizes_and_strides(t.sizes(), t.strides(), t.storage_offset());
          view._set_conj(t.is_conj());
          view._set_neg(t.is_neg());
          return view;
        }
        auto view = at::cpu::as_strided_symint(a.device, c10::fromIntArrayRefSlow(t.sizes()), c10::fromIntArrayRefSlow(t.strides()), c10::SymInt(t.storage_offset()));
        if (view.is_conj() != t.is_conj()) view._set_conj(t.is_conj());   // conj() / resolve_neg views keep their bits
        if (view.is_neg() != t.is_neg()) view._set_neg(t.is_neg());
        return view;
      }
    }
  }
  return to_device(t, *device);
}

void run_checked(const c10::OperatorHandle& op, torch::jit::Stack* stack, DeviceCheck mode) {
  auto device = check_devices(op, stack, mode);
  const auto& schema = op.schema();
  std::unique_lock<std::mutex> lending;   // declared before `lent`: released after it gives the state back
  std::optional<LentGenerator> lent;
  if (g_rng_per_device.load() && op.hasTag(at::Tag::nondeterministic_seeded)) {
    if (takes_generator(schema)) {
      use_device_generator(op, stack);
    } else {
      lending = std::unique_lock<std::mutex>(g_lend_lock);
      lent.emplace(at::detail::getDefaultCPUGenerator(), device_generator(t_device));
    }
  }
  size_t nargs = schema.arguments().size();
  size_t base = stack->size() - nargs;
  std::vector<Aliased> args;
  for (size_t i = 0; i < nargs; ++i) {
    auto& v = (*stack)[base + i];
    const auto* alias = schema.arguments()[i].alias_info();
    bool written = alias && alias->isWrite();
    if (v.isTensor()) {
      const at::Tensor& t = v.toTensor();
      if (t.defined() && t.is_privateuseone()) {
        args.push_back({t, host_alias(t), written});
        v = c10::IValue(args.back().host);
      }
    } else if (v.isTensorList()) {
      c10::List<at::Tensor> hosts;
      for (const at::Tensor& t : v.toTensorList()) {
        at::Tensor h = host_alias(t);
        if (t.defined() && t.is_privateuseone()) args.push_back({t, h, written});
        hosts.push_back(h);
      }
      v = c10::IValue(hosts);
    } else if (auto list = optional_tensors(v)) {
      c10::List<std::optional<at::Tensor>> hosts;
      for (std::optional<at::Tensor> t : *list) {
        if (t && t->defined() && t->is_privateuseone()) {
          args.push_back({*t, host_alias(*t), written});
          hosts.push_back(args.back().host);
        } else {
          hosts.push_back(t);
        }
      }
      v = c10::IValue(hosts);
    }
  }
  op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::CPU), stack);
  for (auto& a : args) {   // an out= argument the CPU kernel resized onto new memory
    if (a.written && (data_of(a.host) != data_of(a.device) || a.host.sizes() != a.device.sizes())) {
      copy_from_and_resize(a.host, a.device);
      a.host = host_alias(a.device);
    }
    if (a.written) narrow_double(a.host);   // an in-place or out= result
  }
  size_t nret = schema.returns().size();
  for (size_t i = stack->size() - nret; i < stack->size(); ++i) {
    auto& v = (*stack)[i];
    if (v.isTensor()) {
      v = on_device(v.toTensor(), args, device);
    } else if (v.isTensorList()) {
      c10::List<at::Tensor> out;
      for (const at::Tensor& t : v.toTensorList()) out.push_back(on_device(t, args, device).toTensor());
      v = c10::IValue(out);
    }
  }
}

// A kernel for an op of the target's list: the device check its wrapper would make, then the host kernel.
void run_on_host(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  run_checked(op, stack, g_no_check_ops.count(op_key(op.schema().operator_name())) ? DeviceCheck::kNoCheck
                                                                                    : DeviceCheck::kExactSame);
}

// The kernels registered for the target's list: each op's check is chosen once, when it is registered.
void run_exact_same(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  run_checked(op, stack, DeviceCheck::kExactSame);
}
void run_no_check(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  run_checked(op, stack, DeviceCheck::kNoCheck);
}

std::string with_field(std::string text, const std::string& field, const std::string& value) {
  for (auto at = text.find(field); at != std::string::npos; at = text.find(field, at + value.size()))
    text.replace(at, field.size(), value);
  return text;
}
std::string with_op(std::string text, const std::string& op) { return with_field(std::move(text), "{op}", op); }

// A vendor kernel's dtype limit (kb/sim/dtypes/<target>.toml): the dtypes one argument may have; any other
// raises the vendor's message ({dtype}: the ScalarType's name, {op}: the op), before the kernel runs.
struct DtypeLimit {
  std::string argument;
  std::bitset<static_cast<size_t>(c10::ScalarType::NumOptions)> allowed;   // bit i: ScalarType i
  std::string message;
  bool not_implemented = false;
};
std::unordered_map<std::string, DtypeLimit> g_dtype_limits;   // by "name.overload", "name.default" or "name"

// The vendor's switch that runs an op that fails on the device on the CPU instead (torch_mlu's
// ENABLE_MLU_FAIL_FALLBACK): its warning, once per op name; empty when off.
std::string g_fail_fallback_text;
std::mutex g_fail_warned_lock;
std::unordered_set<std::string> g_fail_warned;

// Whether a limited op's failure falls back to the CPU instead (warning once per op name, as the vendor does).
bool fails_over(const std::string& op) {
  if (g_fail_fallback_text.empty()) return false;
  bool first;
  {
    std::lock_guard<std::mutex> lock(g_fail_warned_lock);
    first = g_fail_warned.insert(op).second;
  }
  if (first) TORCH_WARN(with_op(g_fail_fallback_text, "aten::" + op));
  if (g_on_fallback) {   // counted with the ops the target lacks: both ran on the CPU
    py::gil_scoped_acquire gil;
    (*g_on_fallback)(op);
  }
  return true;
}

// Raise the limit's message when `type` is not allowed.
void check_limit(const DtypeLimit& limit, c10::ScalarType type, const std::string& op) {
  if (limit.allowed.test(static_cast<size_t>(type))) return;
  std::string text = with_op(with_field(limit.message, "{dtype}", c10::toString(type)), op);
  TORCH_CHECK_NOT_IMPLEMENTED(!limit.not_implemented, text);
  TORCH_CHECK(false, text);
}

void check_own_limit(const std::string& key, std::initializer_list<std::pair<const char*, const at::Tensor*>> args) {
  auto limit = g_dtype_limits.find(key);
  if (limit == g_dtype_limits.end()) return;
  for (const auto& [name, tensor] : args)
    if (limit->second.argument == name && tensor->defined() &&
        !limit->second.allowed.test(static_cast<size_t>(tensor->scalar_type())) && !fails_over(key))
      check_limit(limit->second, tensor->scalar_type(), key);   // else it runs on the host, as it does anyway
}

class LimitedKernel final : public c10::OperatorKernel {
 public:
  LimitedKernel(DtypeLimit limit, DeviceCheck mode, size_t index, bool composite)
      : limit_(std::move(limit)), mode_(mode), index_(index), composite_(composite) {}
  void operator()(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack) {
    const auto& v = (*stack)[stack->size() - op.schema().arguments().size() + index_];
    if (v.isTensor() && v.toTensor().defined() && !limit_.allowed.test(static_cast<size_t>(v.toTensor().scalar_type()))) {
      const std::string& full = op.schema().name();
      std::string name = full.rfind("aten::", 0) == 0 ? full.substr(6) : full;
      if (fails_over(name)) return run_checked(op, stack, DeviceCheck::kNone);   // at::native::cpu_fallback
      check_limit(limit_, v.toTensor().scalar_type(), name);
    }
    // a composite: its CompositeExplicitAutograd kernel (what the CPU key holds), whose ops dispatch on the device
    if (composite_) return op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::CPU), stack);
    run_checked(op, stack, mode_);
  }

 private:
  DtypeLimit limit_;
  DeviceCheck mode_;
  size_t index_;   // the limited argument's position in the schema
  bool composite_;
};

// The position of a named argument in an op's schema, if it has one.
std::optional<size_t> argument_index(const c10::OperatorHandle& op, const std::string& name) {
  const auto& args = op.schema().arguments();
  for (size_t i = 0; i < args.size(); ++i)
    if (args[i].name() == name) return i;
  return std::nullopt;
}

void fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const auto& name = op.schema().operator_name();
  if (!g_check_ops || g_foreign_ops.count(op_key(name))) return run_on_host(op, stack);
  std::string full = name.name + (name.overload_name.empty() ? "" : "." + name.overload_name);
  TORCH_CHECK_NOT_IMPLEMENTED(g_fallback != Fallback::kRaise, "Could not run '", full, "' with arguments from the '",
                              g_label, "' backend. [", g_lacking_note, "]");
  if (g_fallback == Fallback::kVendorError) {
    TORCH_CHECK_NOT_IMPLEMENTED(!g_vendor_error_not_implemented, with_op(g_fallback_text, full));
    TORCH_CHECK(false, with_op(g_fallback_text, full));
  }
  bool first;
  {
    std::lock_guard<std::mutex> lock(g_warned_lock);
    first = g_warned.insert(g_warn_per_overload ? full : name.name).second;
  }
  if (first) TORCH_WARN(with_op(g_fallback_text, full));
  if (g_on_fallback) {
    py::gil_scoped_acquire gil;
    (*g_on_fallback)(full);
  }
  run_checked(op, stack, DeviceCheck::kNone);   // at::native::cpu_fallback copies whatever it is given
}

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) { m.fallback(torch::CppFunction::makeFromBoxedFunction<&fallback>()); }
TORCH_LIBRARY_IMPL(_, AutogradPrivateUse1, m) { m.fallback(torch::CppFunction::makeFallthrough()); }

// ---- autocast: the vendor's own op lists, set from Python (sim/autocast.py) ---------------------
// Each listed op gets one boxed kernel on AutocastPrivateUse1 that applies the op's policy as PyTorch's
// autocast wrappers do (casting through at::autocast::cached_cast), then calls the op below autocast.
// Ops the list does not name fall through and run in the dtypes they are given.
enum class CastPolicy { lower_precision_fp, fp32, fp32_set_opt_dtype, fp32_append_dtype, promote, banned };

struct AutocastRule {
  CastPolicy policy;
  std::optional<c10::OperatorHandle> redispatch;   // fp32_append_dtype: the overload that takes the dtype
};

std::unordered_map<c10::OperatorName, AutocastRule>* g_autocast_rules = nullptr;
torch::Library* g_autocast_ops = nullptr;
std::string g_banned_message;

void cast_tensors(torch::jit::Stack* stack, size_t begin, at::ScalarType to) {
  for (size_t i = begin; i < stack->size(); ++i) {
    auto& v = (*stack)[i];
    if (v.isTensor()) {
      v = at::autocast::cached_cast(to, v.toTensor(), kDev);
    } else if (v.isTensorList()) {
      c10::List<at::Tensor> cast;
      for (const at::Tensor& t : v.toTensorList()) cast.push_back(at::autocast::cached_cast(to, t, kDev));
      v = c10::IValue(cast);
    }
  }
}

at::ScalarType promote_type(const torch::jit::Stack* stack, size_t begin) {
  at::ScalarType to = at::autocast::get_lower_precision_fp_from_device_type(kDev);
  for (size_t i = begin; i < stack->size(); ++i) {
    const auto& v = (*stack)[i];
    if (v.isTensor()) to = at::autocast::prioritize(to, v.toTensor(), kDev);
    if (v.isTensorList())
      for (const at::Tensor& t : v.toTensorList()) to = at::autocast::prioritize(to, t, kDev);
  }
  return to;
}

bool first_arg_eligible(const torch::jit::Stack* stack, size_t begin) {
  const auto& v = (*stack)[begin];
  return v.isTensor() && at::autocast::is_autocast_eligible(v.toTensor(), kDev) &&
         v.toTensor().scalar_type() != at::kDouble;
}

void autocast_kernel(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const AutocastRule& rule = g_autocast_rules->at(op.operator_name());
  TORCH_CHECK(rule.policy != CastPolicy::banned, g_banned_message);
  c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::DispatchKey::AutocastPrivateUse1);
  const auto& args = op.schema().arguments();
  size_t begin = stack->size() - args.size();
  switch (rule.policy) {
    case CastPolicy::lower_precision_fp:
      cast_tensors(stack, begin, at::autocast::get_lower_precision_fp_from_device_type(kDev));
      break;
    case CastPolicy::fp32:
      cast_tensors(stack, begin, at::kFloat);
      break;
    case CastPolicy::promote:
      cast_tensors(stack, begin, promote_type(stack, begin));
      break;
    case CastPolicy::fp32_set_opt_dtype:   // an unset `ScalarType? dtype` becomes float when self is eligible
      if (first_arg_eligible(stack, begin))
        for (size_t i = 0; i < args.size(); ++i) {
          const auto& type = args[i].real_type();
          if (type->kind() == c10::TypeKind::OptionalType &&
              type->castRaw<c10::OptionalType>()->getElementType()->kind() == c10::TypeKind::ScalarTypeType &&
              (*stack)[begin + i].isNone())
            (*stack)[begin + i] = c10::IValue(static_cast<int64_t>(at::kFloat));
        }
      break;
    case CastPolicy::fp32_append_dtype: {   // call the overload that takes a dtype: float when self is eligible
      at::ScalarType out = first_arg_eligible(stack, begin) ? at::kFloat : (*stack)[begin].toTensor().scalar_type();
      stack->push_back(c10::IValue(static_cast<int64_t>(out)));
      rule.redispatch->callBoxed(stack);
      return;
    }
    case CastPolicy::banned:
      break;
  }
  op.callBoxed(stack);
}

// rules: (op "name.overload", policy index as CastPolicy, the dtype overload for fp32_append_dtype or "").
// Registers a kernel for each op this torch has; returns the ops it lacks.
std::vector<std::string> set_autocast(const std::vector<std::tuple<std::string, int, std::string>>& rules,
                                      const std::string& banned_message) {
  delete g_autocast_ops;
  g_autocast_ops = new torch::Library(torch::Library::IMPL, "aten", c10::DispatchKey::AutocastPrivateUse1,
                                      __FILE__, __LINE__);
  auto* table = new std::unordered_map<c10::OperatorName, AutocastRule>();
  auto find = [](const std::string& key) {
    auto dot = key.find('.');
    return c10::Dispatcher::singleton().findSchema(
        {"aten::" + key.substr(0, dot), dot == std::string::npos ? "" : key.substr(dot + 1)});
  };
  std::vector<std::string> unknown;
  for (const auto& [key, policy, redispatch] : rules) {
    TORCH_CHECK(policy >= 0 && policy <= static_cast<int>(CastPolicy::banned), "unknown autocast policy ", policy);
    auto handle = find(key);
    std::optional<c10::OperatorHandle> target;
    if (static_cast<CastPolicy>(policy) == CastPolicy::fp32_append_dtype) target = find(redispatch);
    if (!handle || (static_cast<CastPolicy>(policy) == CastPolicy::fp32_append_dtype && !target)) {
      unknown.push_back(key);
      continue;
    }
    table->insert_or_assign(handle->operator_name(), AutocastRule{static_cast<CastPolicy>(policy), target});
    g_autocast_ops->impl(key.c_str(), torch::CppFunction::makeFromBoxedFunction<&autocast_kernel>());
  }
  g_banned_message = banned_message;
  std::swap(g_autocast_rules, table);
  delete table;
  return unknown;
}

TORCH_LIBRARY_IMPL(_, AutocastPrivateUse1, m) { m.fallback(torch::CppFunction::makeFallthrough()); }

// ---- Python surface -----------------------------------------------------------------------------
void configure(int devices, int64_t capacity, const std::string& label, bool rng_per_device) {
  TORCH_CHECK(devices >= 0 && devices <= kMaxDevices, "the simulator supports 0 to ", kMaxDevices, " devices");
  g_device_count = devices;
  g_capacity = capacity;
  g_label = label;
  g_rng_per_device = rng_per_device;
  static bool hooks_registered = false;
  if (!hooks_registered) {
    at::RegisterPrivateUse1HooksInterface(g_hooks);
    hooks_registered = true;
  }
}

void configure_allocator(int64_t pad, int64_t min_block, int64_t small_size, int64_t small_segment,
                         int64_t min_large_alloc, int64_t large_segment, int64_t round_large) {
  TORCH_CHECK(min_block > 0 && small_segment > 0 && large_segment > 0 && round_large > 0, "allocator sizes must be > 0");
  std::lock_guard<std::mutex> lock(g_memory_lock);
  g_sizes = AllocatorSizes{pad, min_block, small_size, small_segment, min_large_alloc, large_segment, round_large};
}

// Register a host kernel for each op the target implements (`supported`), and a limit-checking kernel for each
// op PyTorch composes (`composites`) whose vendor kernel has a dtype limit; returns the names this torch lacks.
std::vector<std::string> set_operators(std::vector<std::string> supported, std::vector<std::string> composites,
                                       bool check, py::object on_fallback, std::string lacking_note) {
  static const std::unordered_set<std::string> owned = {
      "empty.memory_format", "empty_strided", "_copy_from", "_copy_from_and_resize", "as_strided", "resize_", "view",
      "_reshape_alias", "set_.source_Storage", "set_.source_Storage_storage_offset", "set_", "set_.source_Tensor",
      "convolution_overrideable", "convolution_backward_overrideable", "record_stream"};
  delete g_target_ops;
  g_target_ops = nullptr;
  std::vector<std::string> unknown;
  if (check) {
    g_target_ops = new torch::Library(torch::Library::IMPL, "aten", c10::DispatchKey::PrivateUse1, __FILE__, __LINE__);
    std::unordered_set<std::string> composite(composites.begin(), composites.end());
    supported.insert(supported.end(), composites.begin(), composites.end());
    for (const auto& key : supported) {
      if (owned.count(key)) continue;
      auto dot = key.find('.');
      std::string name = "aten::" + key.substr(0, dot);
      std::string overload = dot == std::string::npos ? "" : key.substr(dot + 1);
      auto handle = c10::Dispatcher::singleton().findSchema({name, overload});
      if (!handle) {
        unknown.push_back(key);
        continue;
      }
      DeviceCheck mode = g_no_check_ops.count(key) ? DeviceCheck::kNoCheck : DeviceCheck::kExactSame;
      // "name.overload", else "name.default" for the overload without a name, else "name": every overload of it
      auto limit = g_dtype_limits.find(dot == std::string::npos ? key + ".default" : key);
      if (limit == g_dtype_limits.end()) limit = g_dtype_limits.find(key.substr(0, dot));
      auto index = limit == g_dtype_limits.end() ? std::nullopt : argument_index(*handle, limit->second.argument);
      if (index) {   // an overload without the limited argument is not limited
        g_target_ops->impl(key.c_str(), torch::CppFunction::makeFromBoxedFunctor(
                                             std::make_unique<LimitedKernel>(limit->second, mode, *index,
                                                                             composite.count(key) > 0)));
      } else if (!composite.count(key)) {
        g_target_ops->impl(key.c_str(), mode == DeviceCheck::kNoCheck
                                            ? torch::CppFunction::makeFromBoxedFunction<&run_no_check>()
                                            : torch::CppFunction::makeFromBoxedFunction<&run_exact_same>());
      }
    }
  }
  g_check_ops = check;
  g_lacking_note = lacking_note;
  delete g_on_fallback;
  g_on_fallback = on_fallback.is_none() ? nullptr : new py::object(on_fallback);
  return unknown;
}

// What an op the target lacks does: "raise" (torchport's error with the lacking note), "warn" (warn with
// `text`, once per op or per op name, count, run on the CPU) or "vendor-error" (raise `text`).
void set_fallback(const std::string& mode, const std::string& text, bool per_overload, bool not_implemented) {
  TORCH_CHECK(mode == "raise" || mode == "warn" || mode == "vendor-error", "unknown fallback mode ", mode);
  g_fallback = mode == "raise" ? Fallback::kRaise : mode == "warn" ? Fallback::kWarnAndRun : Fallback::kVendorError;
  g_fallback_text = text;
  g_warn_per_overload = per_overload;
  g_vendor_error_not_implemented = not_implemented;
}

// The vendor kernels' dtype limits: (op key or name, argument, allowed ScalarType names, message, not_implemented),
// and the warning of the vendor's switch that runs a failing op on the CPU instead ("": off).
// Set before set_operators, which registers a limited kernel for each op that has one.
void set_dtype_limits(std::vector<std::tuple<std::string, std::string, std::vector<std::string>, std::string, bool>> limits,
                      std::string fail_fallback_text) {
  g_fail_fallback_text = fail_fallback_text;
  g_dtype_limits.clear();
  for (const auto& [key, argument, allowed, message, not_implemented] : limits) {
    DtypeLimit limit{argument, {}, message, not_implemented};
    for (const auto& name : allowed) {
      bool known = false;
      for (int i = 0; i < static_cast<int>(c10::ScalarType::NumOptions); ++i) {
        if (name == c10::toString(static_cast<c10::ScalarType>(i))) {
          limit.allowed.set(i);
          known = true;
        }
      }
      TORCH_CHECK(known, "torchport sim: unknown dtype '", name, "' in the dtype limit of ", key);
    }
    g_dtype_limits[key] = limit;
  }
}

// Ops whose wrapper makes no device check, and ops of other namespaces the vendor has kernels for.
void set_op_sets(std::vector<std::string> no_check, std::vector<std::string> foreign) {
  g_no_check_ops = std::unordered_set<std::string>(no_check.begin(), no_check.end());
  g_foreign_ops = std::unordered_set<std::string>(foreign.begin(), foreign.end());
}

// Sparse COO tensors on the device: a sparse tensor is its indices and values (dense device tensors), so
// the kernels that build and take it apart are PyTorch's device-independent ones.  Registered for the ops
// the target registers for SparsePrivateUse1 (kb/ops key_limited); returns the names it has no kernel for.
torch::Library* g_sparse_ops = nullptr;   // never destroyed, as g_target_ops
torch::Library* g_sparse_fallback = nullptr;
std::string g_sparse_error;               // a vendor's own error for the sparse ops it lacks ({op}: the op)

void sparse_fallback(const c10::OperatorHandle& op, torch::jit::Stack*) {
  const auto& name = op.schema().operator_name();
  TORCH_CHECK(false, with_op(g_sparse_error, name.name + (name.overload_name.empty() ? "" : "." + name.overload_name)));
}

std::vector<std::string> set_sparse_operators(std::vector<std::string> names, std::string error) {
  if (!error.empty() && g_sparse_fallback == nullptr) {   // as the vendor registers a SparsePrivateUse1 fallback
    g_sparse_error = error;
    g_sparse_fallback = new torch::Library(torch::Library::IMPL, "_", c10::DispatchKey::SparsePrivateUse1, __FILE__, __LINE__);
    g_sparse_fallback->fallback(torch::CppFunction::makeFromBoxedFunction<&sparse_fallback>());
  }
  using Register = void (*)(torch::Library&);
  static const std::unordered_map<std::string, Register> kernels = {
      {"_sparse_coo_tensor_with_dims_and_tensors",
       [](torch::Library& m) { m.impl("_sparse_coo_tensor_with_dims_and_tensors", TORCH_FN(at::native::new_with_dims_and_tensor_sparse_symint)); }},
      {"_indices", [](torch::Library& m) { m.impl("_indices", TORCH_FN(at::native::_indices_sparse)); }},
      {"_values", [](torch::Library& m) { m.impl("_values", TORCH_FN(at::native::_values_sparse)); }},
      {"indices", [](torch::Library& m) { m.impl("indices", TORCH_FN(at::native::indices_sparse)); }},
      {"values", [](torch::Library& m) { m.impl("values", TORCH_FN(at::native::values_sparse)); }},
      {"_nnz", [](torch::Library& m) { m.impl("_nnz", TORCH_FN(at::native::_nnz_sparse)); }},
      {"sparse_dim", [](torch::Library& m) { m.impl("sparse_dim", TORCH_FN(at::native::sparse_dim_sparse)); }},
      {"dense_dim", [](torch::Library& m) { m.impl("dense_dim", TORCH_FN(at::native::dense_dim_sparse)); }},
      {"is_coalesced", [](torch::Library& m) { m.impl("is_coalesced", TORCH_FN(at::native::is_coalesced_sparse)); }},
      {"_coalesced_", [](torch::Library& m) { m.impl("_coalesced_", TORCH_FN(at::native::_coalesced_sparse_)); }},
  };
  std::vector<std::string> missing;
  if (g_sparse_ops == nullptr && !names.empty())
    g_sparse_ops = new torch::Library(torch::Library::IMPL, "aten", c10::DispatchKey::SparsePrivateUse1, __FILE__, __LINE__);
  for (const auto& name : names) {
    auto it = kernels.find(name);
    if (it == kernels.end()) {
      missing.push_back(name);
    } else {
      it->second(*g_sparse_ops);
    }
  }
  return missing;
}

py::dict memory_stats(int device) {
  int i = checked_index(device);
  std::lock_guard<std::mutex> lock(g_memory_lock);
  const auto& m = g_memory[i];
  py::dict d;
  d["allocated"] = m.allocated;
  d["peak"] = m.peak;
  d["reserved"] = m.reserved;
  d["reserved_peak"] = m.reserved_peak;
  d["segments"] = int64_t(m.segments.size());
  d["segments_made"] = m.segments_made;
  d["allocations"] = m.allocations;
  d["frees"] = m.frees;
  d["oom"] = m.oom;
  d["retries"] = m.retries;
  d["limit"] = m.limit;
  d["capacity"] = g_capacity.load();
  return d;
}

// The segments and their blocks, with the keys of PyTorch's memory_snapshot()["segments"].
py::list memory_snapshot() {
  std::lock_guard<std::mutex> lock(g_memory_lock);
  py::list out;
  for (int dev = 0; dev < g_device_count.load(); ++dev) {
    for (const auto& [id, seg] : g_memory[dev].segments) {
      py::list blocks;
      int64_t allocated = 0, requested = 0;
      for (const auto& [offset, b] : seg.blocks) {
        py::dict block;
        block["address"] = seg.address + offset;
        block["size"] = b.size;
        block["requested_size"] = b.allocated ? b.requested : 0;
        block["state"] = b.allocated ? "active_allocated" : "inactive";
        block["frames"] = py::list();
        blocks.append(block);
        if (b.allocated) allocated += b.size, requested += b.requested;
      }
      py::dict d;
      d["device"] = dev;
      d["address"] = seg.address;
      d["total_size"] = seg.size;
      d["allocated_size"] = allocated;
      d["active_size"] = allocated;
      d["requested_size"] = requested;
      d["stream"] = 0;
      d["segment_type"] = seg.pool == 0 ? "small" : "large";
      d["segment_pool_id"] = py::make_tuple(0, 0);
      d["is_expandable"] = false;
      d["frames"] = py::list();
      d["blocks"] = blocks;
      out.append(d);
    }
  }
  return out;
}

void reset_peak(int device) {
  int i = checked_index(device);
  std::lock_guard<std::mutex> lock(g_memory_lock);
  auto& m = g_memory[i];
  m.peak = m.allocated;
  m.reserved_peak = m.reserved;
}

void empty_cache() {
  std::lock_guard<std::mutex> lock(g_memory_lock);
  for (auto& m : g_memory) release_free_segments(m);
}

void set_memory_limit(int device, int64_t limit) {
  int i = checked_index(device);
  std::lock_guard<std::mutex> lock(g_memory_lock);
  g_memory[i].limit = limit;
}

at::Generator generator(int device) { return generator_for(checked_index(device)); }

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "torchport simulated device (PrivateUse1 on host memory)";
  m.def("configure", &configure);
  m.def("set_operators", &set_operators);
  m.def("set_fallback", &set_fallback);
  m.def("set_dtype_limits", &set_dtype_limits);
  m.def("set_op_sets", &set_op_sets);
  m.def("set_sparse_operators", &set_sparse_operators);
  m.def("memory_stats", &memory_stats);
  m.def("reset_peak", &reset_peak);
  m.def("configure_allocator", &configure_allocator);
  m.def("empty_cache", &empty_cache);
  m.def("set_memory_limit", &set_memory_limit);
  m.def("memory_snapshot", &memory_snapshot);
  m.def("generator", &generator);
  m.def("set_autocast", &set_autocast, "register the vendor's autocast policies; returns the ops this torch lacks");
  m.def("host_alias", &host_alias, "a CPU tensor sharing a device tensor's memory");
  m.def("set_double_as_float", [](bool on, std::string warning) {
    g_double_warning = std::move(warning);
    g_double_as_float = on;
  }, "hold and compute 64-bit floating data as 32-bit, warning once when a host copy brings it (torch_mlu)");
  m.def("current_device", [] { return t_device; });
  m.def("device_count", [] { return g_device_count.load(); });
  m.def("set_device", [](int d) { t_device = checked_index(d); });
}
