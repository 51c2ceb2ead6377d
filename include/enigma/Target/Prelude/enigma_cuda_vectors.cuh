/*===- enigma_cuda_vectors.cuh - Metal's vector names in CUDA kernels -----===*
 *
 * The emitter prints vectors with Metal's spelling in every target (float4,
 * uint2, half3, ...): metal::vec of the semantics library, with Metal's
 * layout and operators. CUDA predeclares float4 & co. as plain structs, so
 * after `using namespace metal;` a bare float4 would be ambiguous; these
 * macros make every such name mean Metal's. Included by
 * enigma_cuda_prelude.cuh after the semantics library and CUDA's headers
 * (cuda_fp16.h defines its own half2).
 *===----------------------------------------------------------------------===*/
#ifndef ENIGMA_CUDA_VECTORS_CUH
#define ENIGMA_CUDA_VECTORS_CUH

#define float2 ::metal::float2
#define float3 ::metal::float3
#define float4 ::metal::float4
#define bool2 ::metal::bool2
#define bool3 ::metal::bool3
#define bool4 ::metal::bool4
#define char2 ::metal::char2
#define char3 ::metal::char3
#define char4 ::metal::char4
#define uchar2 ::metal::uchar2
#define uchar3 ::metal::uchar3
#define uchar4 ::metal::uchar4
#define short2 ::metal::short2
#define short3 ::metal::short3
#define short4 ::metal::short4
#define ushort2 ::metal::ushort2
#define ushort3 ::metal::ushort3
#define ushort4 ::metal::ushort4
#define int2 ::metal::int2
#define int3 ::metal::int3
#define int4 ::metal::int4
#define uint2 ::metal::uint2
#define uint3 ::metal::uint3
#define uint4 ::metal::uint4
#define long2 ::metal::long2
#define long3 ::metal::long3
#define long4 ::metal::long4
#define ulong2 ::metal::ulong2
#define ulong3 ::metal::ulong3
#define ulong4 ::metal::ulong4
#if METAL_HAS_HALF
#define half2 ::metal::half2
#define half3 ::metal::half3
#define half4 ::metal::half4
#endif
#if METAL_HAS_BFLOAT
#define bfloat2 ::metal::bfloat2
#define bfloat3 ::metal::bfloat3
#define bfloat4 ::metal::bfloat4
#endif

#endif /* ENIGMA_CUDA_VECTORS_CUH */
