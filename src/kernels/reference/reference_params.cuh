#pragma once
// Parameters of the reference GEMM kernel, shared by the host (src/bench/reference.cpp, g++)
// and the device (reference_gemm.cuh, NVRTC). Plain C types only, so both compilers lay the
// struct out identically and NVRTC needs no standard headers.

// Element types the reference reads (codes, not autogemm::DType, which NVRTC cannot see).
enum ReferenceElementType {
  kReferenceFp32 = 0,
  kReferenceBf16 = 1,
  kReferenceFp16 = 2,
  kReferenceE4m3 = 3,
  kReferenceE5m2 = 4,
};

// How A and B are scaled back to real values (autogemm::Scaling).
enum ReferenceScaling {
  kReferenceScaleNone = 0,
  kReferenceScalePerTensor = 1,     // scale_a[0], scale_b[0]
  kReferenceScaleBlock = 2,         // A: M x ceil(K/128) row-major; B: ceil(N/128) x ceil(K/128)
  kReferenceScaleRowwise = 3,       // A: scale_a[row], B: scale_b[col]
  kReferenceScale1x128 = 4,         // A: M x ceil(K/128), B: N x ceil(K/128), both row-major
};

struct ReferenceGemmParams {
  long long m, n, k;
  long long lda, ldb, ldc;        // leading dimensions of A, B and C as stored
  const void* a;
  const void* b;
  const void* c;                  // read only when beta != 0
  double* d;                      // M x N, row-major, ld = N, float64
  const float* scale_a;
  const float* scale_b;
  double alpha, beta;
  int a_type, b_type, c_type;     // ReferenceElementType
  int a_k_major;                  // 1: A stored M x K; 0: K x M
  int b_k_major;                  // 1: B stored N x K; 0: K x N
  int scaling;                    // ReferenceScaling
  // Optional (null: not written): sum over k of |alpha * a * b|, plus |beta * c|, per output,
  // M x N, ld = N: the scale of the rounding a correct lower-precision result may carry.
  double* magnitude;
};
