// rayo: one Tensor/Device API over CPU, Vulkan and CUDA backends.
#pragma once

#include "rayo/device.hpp"         // IWYU pragma: export
#include "rayo/dlpack.hpp"         // IWYU pragma: export
#include "rayo/dtype.hpp"          // IWYU pragma: export
#include "rayo/error.hpp"          // IWYU pragma: export
#include "rayo/gguf.hpp"           // IWYU pragma: export
#include "rayo/graph.hpp"          // IWYU pragma: export
#include "rayo/native.hpp"         // IWYU pragma: export
#include "rayo/ops.hpp"            // IWYU pragma: export
#include "rayo/quant.hpp"          // IWYU pragma: export
#include "rayo/settings.hpp"       // IWYU pragma: export
#include "rayo/shape.hpp"          // IWYU pragma: export
#include "rayo/stats.hpp"          // IWYU pragma: export
#include "rayo/tensor.hpp"         // IWYU pragma: export
#include "rayo/version.hpp"        // IWYU pragma: export
#include "rayo/vulkan_shader.hpp"  // IWYU pragma: export
