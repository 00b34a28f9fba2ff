// y = a·x + y over n elements: the compute shader examples/vulkan_shader.cpp dispatches on rayo
// tensors (glslc compiles it at build time). Binding i is the i-th tensor argument; the push
// constants are the scalar arguments in order.
#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) buffer Y { float y[]; };
layout(push_constant) uniform Push {
    float a;
    uint n;
};

void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
