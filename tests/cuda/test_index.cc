// Indexing and dropout on a GPU against their CPU twins: the embedding lookup and its
// scatter-add backward (repeated rows add up), gather/scatter_add_ as cross-entropy uses them,
// and dropout, whose mask must be the CPU's mask bit for bit for the same generator state.
#include <catch2/catch.hpp>

#include "autograd/ops.h"
#include "autograd/transformer_ops.h"
#include "gpu_test.h"
#include "tensor/index.h"

using namespace ringgrad;
using namespace ringgrad::testing;
using Inputs = std::vector<Tensor>;

TEST_CASE("cuda embedding: index_select forward, index_add_ backward with repeated indices") {
  RINGGRAD_REQUIRE_GPU();
  const Tensor weight = random_param({65, 48}, 20);
  const Tensor idx = random_indices({4, 32}, 65, 21);  // 128 lookups in 65 rows: many repeats
  CHECK(compare_with_cpu([](const Inputs& in) { return embedding(in[0], in[1]); }, {weight, idx}, kFloat32) == "");
}

TEST_CASE("cuda index_add_ and index_select called directly") {
  RINGGRAD_REQUIRE_GPU();
  const Tensor table = random_tensor({10, 7}, 22), src = random_tensor({30, 7}, 23);
  const Tensor idx = random_indices({30}, 10, 24);
  CHECK(compare(kernels::index_select(to_gpu(table), to_gpu(idx)), kernels::index_select(table, idx), kFloat32) == "");
  const Tensor on_gpu = to_gpu(table);
  kernels::index_add_(on_gpu, to_gpu(idx), to_gpu(src));
  kernels::index_add_(table, idx, src);
  CHECK(compare(on_gpu, table, kFloat32) == "");
}

TEST_CASE("cuda gather and scatter_add_ along the last and the first dim") {
  RINGGRAD_REQUIRE_GPU();
  const Tensor a = random_param({6, 9}, 25);
  for (std::int64_t dim : {1, 0}) {
    INFO("dim " << dim);
    const Tensor idx = random_indices(dim == 1 ? Shape{6, 4} : Shape{3, 9}, dim == 1 ? 9 : 6, 26);
    CHECK(compare_with_cpu([dim](const Inputs& in) { return gather(in[0], dim, in[1]); }, {a, idx}, kFloat32) == "");
    const Tensor src = random_tensor(idx.shape(), 27);
    const Tensor dst = Tensor::zeros({6, 9}), on_gpu = Tensor::zeros({6, 9}, DType::Float32, gpu());
    kernels::scatter_add_(dst, dim, idx, src);
    kernels::scatter_add_(on_gpu, dim, to_gpu(idx), to_gpu(src));
    CHECK(compare(on_gpu, dst, kFloat32) == "");
  }
}

TEST_CASE("cuda dropout: the same mask as the CPU for the same generator, and its gradient") {
  RINGGRAD_REQUIRE_GPU();
  // Dropped elements differ by |x| / (1 - p) from kept ones, far beyond the tolerance, so
  // agreement proves the masks are equal element for element.
  const Tensor x = random_param({3, 64, 129}, 28);
  for (double p : {0.1, 0.5}) {
    INFO("p " << p);
    auto op = [p](const Inputs& in) {
      Generator gen(2024);
      gen.set_offset(17);  // mid-stream, as after other draws
      return dropout(in[0], p, true, gen);
    };
    CHECK(compare_with_cpu(op, {x}, kFloat32) == "");
  }
}
