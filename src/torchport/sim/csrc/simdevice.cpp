// torchport's simulated accelerator: PyTorch's PrivateUse1 device backed by host memory.
//
// Owns what a PyTorch backend must own (allocator, device guard with streams and timed events,
// hooks with generators and pinned memory, the kernels that create, copy and view tensors,
// convolution_overrideable) and routes every other operator through PyTorch's CPU fallback,
// after checking it against the target's operator list: an operator the target lacks raises the
// vendor-style error, or runs on the CPU and is counted when CPU fallback is on.  Autocast for the
// device applies the vendor's own op lists, set from Python.  Numerics are the CPU's; nothing here is timed like a device.
#include <torch/extension.h>

#include <ATen/EmptyTensor.h>
#include <ATen/autocast_mode.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <ATen/native/CPUFallback.h>
#include <ATen/core/op_registration/adaption.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/as_strided_cpu_dispatch.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/core/impl/alloc_cpu.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
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

// ---- memory statistics --------------------------------------------------------------------------
struct DeviceMemory {
  std::atomic<int64_t> allocated{0}, peak{0}, allocations{0}, frees{0}, oom{0};
};
DeviceMemory g_memory[kMaxDevices];

thread_local int t_device = 0;

int checked_index(c10::DeviceIndex index) {
  int i = index < 0 ? t_device : index;
  TORCH_CHECK(i < g_device_count.load(), g_label, " error: invalid device ordinal ", i, " (the simulated ",
              g_label, " has ", g_device_count.load(), " device(s); set them with --devices)");
  return i;
}

struct Block {
  void* ptr;
  size_t size;
  int device;
};

std::string human(int64_t n) {
  char buf[64];
  snprintf(buf, sizeof buf, "%.2f GiB", double(n) / double(int64_t(1) << 30));
  return buf;
}

struct SimAllocator final : at::Allocator {
  at::DataPtr allocate(size_t n) override {
    int dev = t_device;
    DeviceMemory& m = g_memory[dev];
    int64_t now = m.allocated.fetch_add(int64_t(n)) + int64_t(n);
    if (now > g_capacity.load()) {
      m.allocated.fetch_sub(int64_t(n));
      m.oom++;
      TORCH_CHECK_WITH(OutOfMemoryError, false, g_label, " out of memory. Tried to allocate ", human(int64_t(n)),
                       " (simulated device ", dev, "; ", human(g_capacity.load()), " total capacity; ",
                       human(now - int64_t(n)), " already allocated)");
    }
    int64_t peak = m.peak.load();
    while (now > peak && !m.peak.compare_exchange_weak(peak, now)) {
    }
    m.allocations++;
    void* p = n ? c10::alloc_cpu(n) : nullptr;
    auto* block = new Block{p, n, dev};
    return {p, block, &release, c10::Device(kDev, static_cast<c10::DeviceIndex>(dev))};
  }
  static void release(void* ctx) {
    auto* block = static_cast<Block*>(ctx);
    g_memory[block->device].allocated -= int64_t(block->size);
    g_memory[block->device].frees++;
    if (block->ptr) c10::free_cpu(block->ptr);
    delete block;
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
  return alias;
}

at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool) {
  host_alias(dst).copy_(host_alias(self));
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
  host_alias(out).copy_(cpu);
  return out;
}

at::Tensor convolution(const at::Tensor& input, const at::Tensor& weight, const std::optional<at::Tensor>& bias,
                       c10::SymIntArrayRef stride, c10::SymIntArrayRef padding, c10::SymIntArrayRef dilation,
                       bool transposed, c10::SymIntArrayRef output_padding, c10::SymInt groups) {
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
  auto r = at::convolution_backward_symint(host_alias(grad), host_alias(input), host_alias(weight), std::nullopt,
                                           stride, padding, dilation, transposed, output_padding, groups, mask);
  auto d = input.device();
  return {to_device(std::get<0>(r), d), to_device(std::get<1>(r), d), to_device(std::get<2>(r), d)};
}

void record_stream(at::Tensor&, c10::Stream) {}  // memory is freed when the last reference goes: nothing to defer

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
// the vendor's device, and an op that reaches the backend fallback is one the target lacks.
bool g_check_ops = false;                     // false: no operator data, every op runs
bool g_cpu_fallback = false;                  // lacking ops run on the CPU (counted) instead of raising
py::object* g_on_fallback = nullptr;          // Python callback(op name) for counting
std::string g_lacking_note;                   // why the simulated device raises, and what the hardware does
// The kernels registered for the target's op list.  Never destroyed at exit (as PyTorch's own
// registrations): deregistering after the dispatcher's statics are gone aborts the process.
torch::Library* g_target_ops = nullptr;

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

// A device kernel sees tensors of one device: PyTorch's own check (and message) for the arguments,
// letting 0-dim CPU tensors through as TensorIterator does on CUDA.
std::optional<c10::Device> check_same_device(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const auto& args = op.schema().arguments();
  size_t base = stack->size() - args.size();
  std::optional<c10::Device> common;
  std::string method = "wrapper_" + g_label + "_" + op.schema().operator_name().name.substr(6);
  auto check = [&](const at::Tensor& t, const std::string& arg) {
    if (!t.defined() || (t.device().is_cpu() && t.dim() == 0)) return;
    c10::impl::check_and_update_common_device(common, t, method.c_str(), arg.c_str());
  };
  for (size_t i = 0; i < args.size(); ++i) {
    const auto& v = (*stack)[base + i];
    if (v.isTensor()) {
      check(v.toTensor(), args[i].name());
    } else if (v.isTensorList()) {
      for (const at::Tensor& t : v.toTensorList()) check(t, args[i].name());
    } else if (v.isOptionalTensorList()) {
      for (std::optional<at::Tensor> t : v.toOptionalTensorList()) if (t) check(*t, args[i].name());
    }
  }
  return common;
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
        return at::cpu::as_strided_symint(a.device, c10::fromIntArrayRefSlow(t.sizes()), c10::fromIntArrayRefSlow(t.strides()), c10::SymInt(t.storage_offset()));
      }
    }
  }
  return to_device(t, *device);
}

void run_on_host(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  auto device = check_same_device(op, stack);
  if (g_rng_per_device.load() && op.hasTag(at::Tag::nondeterministic_seeded)) use_device_generator(op, stack);
  const auto& schema = op.schema();
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
    } else if (v.isOptionalTensorList()) {
      c10::List<std::optional<at::Tensor>> hosts;
      for (std::optional<at::Tensor> t : v.toOptionalTensorList()) {
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

void fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  if (g_check_ops) {
    const auto& name = op.schema().operator_name();
    std::string full = name.name + (name.overload_name.empty() ? "" : "." + name.overload_name);
    TORCH_CHECK_NOT_IMPLEMENTED(g_cpu_fallback, "Could not run '", full, "' with arguments from the '", g_label,
                                "' backend. [", g_lacking_note, "]");
    if (g_on_fallback) {
      py::gil_scoped_acquire gil;
      (*g_on_fallback)(full);
    }
  }
  run_on_host(op, stack);
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
  TORCH_CHECK(devices >= 1 && devices <= kMaxDevices, "the simulator supports 1 to ", kMaxDevices, " devices");
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

// Register a host kernel for each op the target implements; returns the names this torch lacks.
std::vector<std::string> set_operators(std::vector<std::string> supported, bool check, bool cpu_fallback,
                                       py::object on_fallback, std::string lacking_note) {
  static const std::unordered_set<std::string> owned = {
      "empty.memory_format", "empty_strided", "_copy_from", "_copy_from_and_resize", "as_strided", "resize_", "view",
      "_reshape_alias", "set_.source_Storage", "set_.source_Storage_storage_offset", "set_", "set_.source_Tensor",
      "convolution_overrideable", "convolution_backward_overrideable", "record_stream"};
  delete g_target_ops;
  g_target_ops = nullptr;
  std::vector<std::string> unknown;
  if (check) {
    g_target_ops = new torch::Library(torch::Library::IMPL, "aten", c10::DispatchKey::PrivateUse1, __FILE__, __LINE__);
    for (const auto& key : supported) {
      if (owned.count(key)) continue;
      auto dot = key.find('.');
      std::string name = "aten::" + key.substr(0, dot);
      std::string overload = dot == std::string::npos ? "" : key.substr(dot + 1);
      if (!c10::Dispatcher::singleton().findSchema({name, overload})) {
        unknown.push_back(key);
        continue;
      }
      g_target_ops->impl(key.c_str(), torch::CppFunction::makeFromBoxedFunction<&run_on_host>());
    }
  }
  g_check_ops = check;
  g_cpu_fallback = cpu_fallback;
  g_lacking_note = lacking_note;
  delete g_on_fallback;
  g_on_fallback = on_fallback.is_none() ? nullptr : new py::object(on_fallback);
  return unknown;
}

py::dict memory_stats(int device) {
  auto& m = g_memory[checked_index(device)];
  py::dict d;
  d["allocated"] = m.allocated.load();
  d["peak"] = m.peak.load();
  d["allocations"] = m.allocations.load();
  d["frees"] = m.frees.load();
  d["oom"] = m.oom.load();
  d["capacity"] = g_capacity.load();
  return d;
}

void reset_peak(int device) {
  auto& m = g_memory[checked_index(device)];
  m.peak = m.allocated.load();
}

at::Generator generator(int device) { return generator_for(checked_index(device)); }

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "torchport simulated device (PrivateUse1 on host memory)";
  m.def("configure", &configure);
  m.def("set_operators", &set_operators);
  m.def("memory_stats", &memory_stats);
  m.def("reset_peak", &reset_peak);
  m.def("generator", &generator);
  m.def("set_autocast", &set_autocast, "register the vendor's autocast policies; returns the ops this torch lacks");
  m.def("host_alias", &host_alias, "a CPU tensor sharing a device tensor's memory");
  m.def("current_device", [] { return t_device; });
  m.def("device_count", [] { return g_device_count.load(); });
  m.def("set_device", [](int d) { t_device = checked_index(d); });
}
