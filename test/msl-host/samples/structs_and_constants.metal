#include <metal_stdlib>
using namespace metal;

// User structs in device and constant memory, program-scope constants,
// function constants with is_function_constant_defined, and helpers taking
// each address space.
struct Particle {
  float3 position;
  float3 velocity;
};
struct Params {
  float dt;
  uint count;
};

constant float kDamping = 0.99f;
constant float3 kGravity = float3(0.0f, -9.8f, 0.0f);
constant bool use_gravity [[function_constant(0)]];
constant bool gravity_given = is_function_constant_defined(use_gravity);

static float3 step(thread const Particle& p, constant Params& params) {
  float3 v = p.velocity * kDamping;
  if (gravity_given && use_gravity)
    v += kGravity * params.dt;
  return v;
}

static void accumulate(threadgroup float* sums, uint i, float v) { sums[i] += v; }

kernel void enigma_kernel_particles(device Particle* particles [[buffer(0)]],
                                    constant Params& params [[buffer(1)]],
                                    device float* energy [[buffer(2)]],
                                    uint gid [[thread_position_in_grid]],
                                    ushort lid [[thread_position_in_threadgroup]]) {
  threadgroup float sums[64];
  sums[lid] = 0.0f;
  if (gid < params.count) {
    Particle p = particles[gid];
    p.velocity = step(p, params);
    p.position += p.velocity * params.dt;
    particles[gid] = p;
    accumulate(sums, lid, length_squared(p.velocity));
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (lid == 0) {
    float total = 0.0f;
    for (uint i = 0; i < 64; ++i)
      total += sums[i];
    energy[gid / 64] = 0.5f * total;
  }
}
