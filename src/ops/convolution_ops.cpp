#include "rayo/ops.hpp"
