/* The smallest program that makes the real CUDA runtime initialise: the cudart tests
 * run it against the logging stand-in driver (tests/cudart/logcuda.c), which records
 * how libcudart reaches the driver. On a stand-in the runtime gives up (it needs
 * NVIDIA's private export tables), so the errors are printed, not treated as failure. */
#include <cstdio>
#include <cuda_runtime.h>

int main()
{
    cudaError_t rc = cudaFree(0);
    std::printf("cudaFree(0): %s\n", cudaGetErrorName(rc));
    int n = -1;
    rc = cudaGetDeviceCount(&n);
    std::printf("cudaGetDeviceCount: %s, %d\n", cudaGetErrorName(rc), n);
    return 0;
}
