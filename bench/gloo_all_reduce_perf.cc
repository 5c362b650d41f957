// gloo_all_reduce_perf: libgloo's AllreduceRingChunked and AllreduceHalvingDoubling (float
// sum, in place, gloo's TCP transport) timed in the same sweep and columns as ringgrad's
// all_reduce_perf (-a picks ringgrad's algorithms to time beside them). Run under ringgrad-run.
#include <memory>
#include <stdexcept>

#include <gloo/allreduce_halving_doubling.h>
#include <gloo/allreduce_ring_chunked.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>

#include "bench/perf/perf_driver.h"

namespace {

using ringgrad::bench::Contender;
using ringgrad::bench::OpSetup;

// gloo's rendezvous on ringgrad's store, so both libraries meet the same way.
class StoreAdapter : public gloo::rendezvous::Store {
 public:
  explicit StoreAdapter(ringgrad::transport::Store& store) : store_(store) {}
  void set(const std::string& key, const std::vector<char>& data) override {
    store_.set("gloo/" + key, std::string_view(data.data(), data.size()));
  }
  std::vector<char> get(const std::string& key) override {
    const std::string v = store_.get("gloo/" + key);
    return {v.begin(), v.end()};
  }
  void wait(const std::vector<std::string>& keys) override { wait(keys, store_.timeout()); }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override {
    std::vector<std::string> prefixed;
    for (const auto& k : keys) prefixed.push_back("gloo/" + k);
    store_.wait(prefixed, timeout);
  }

 private:
  ringgrad::transport::Store& store_;
};

template <template <typename> class GlooAllreduce>
Contender gloo_contender(const std::string& name, std::shared_ptr<gloo::Context> context) {
  return {name, [context](const OpSetup& s) -> std::function<void()> {
            if (s.dtype != ringgrad::collectives::DType::kFloat32 || s.op != ringgrad::collectives::ReduceOp::SUM)
              throw std::invalid_argument("gloo_all_reduce_perf times float sum only (-d float -o sum)");
            auto algo = std::make_shared<GlooAllreduce<float>>(context, std::vector<float*>{static_cast<float*>(s.recv)},
                                                               static_cast<int>(s.count));
            return [algo] { algo->run(); };
          },
          false, {}};
}

}  // namespace

int main(int argc, char** argv) {
  return ringgrad::bench::run_perf(ringgrad::collectives::CollKind::kAllReduce, argc, argv,
                                   [](ringgrad::collectives::Communicator& comm) {
    StoreAdapter store(comm.store());
    gloo::transport::tcp::attr attr("127.0.0.1");
    auto device = gloo::transport::tcp::CreateDevice(attr);
    auto context = std::make_shared<gloo::rendezvous::Context>(comm.rank(), comm.world_size());
    context->connectFullMesh(store, device);
    return std::vector<Contender>{gloo_contender<gloo::AllreduceRingChunked>("gloo:ring_chunked", context),
                                  gloo_contender<gloo::AllreduceHalvingDoubling>("gloo:halving_doubling", context)};
  });
}
