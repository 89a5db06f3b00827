// device_launch_parameters.h for the CPU build (tools/cuda_cpu): everything is in cuda_cpu.h, which the loader
// force-includes; this file exists so `#include <device_launch_parameters.h>` in a kernel compiles unchanged.
#pragma once
#include "cuda_cpu.h"
