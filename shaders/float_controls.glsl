// The float32 denormal mode of a shader. cmake/RayoShaders.cmake builds every .comp that includes
// this file twice: plainly, and with -DRAYO_DENORM_PRESERVE, which declares the SPIR-V execution
// mode DenormPreserve for 32-bit floats (SPV_KHR_float_controls). Without it a device may flush
// subnormal inputs and results to zero (NVIDIA does by default); the CPU backend keeps them, so the
// backend picks the preserving build wherever the device can keep float32 subnormals
// (PhysicalDevice::preserves_f32_subnormals).
#ifdef RAYO_DENORM_PRESERVE
#extension GL_EXT_spirv_intrinsics : require
// 4459: execution mode DenormPreserve (operand: the float width); 4464: capability DenormPreserve.
spirv_execution_mode(extensions = ["SPV_KHR_float_controls"], capabilities = [4464], 4459, 32);
#endif
