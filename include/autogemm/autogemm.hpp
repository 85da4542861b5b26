#pragma once
// Umbrella header.
#include "autogemm/config.hpp"
#include "autogemm/device.hpp"
#include "autogemm/epilogue.hpp"
#include "autogemm/errors.hpp"
#include "autogemm/gemm.hpp"
#include "autogemm/grouped.hpp"
#include "autogemm/plan.hpp"
#include "autogemm/problem.hpp"
#include "autogemm/quantize.hpp"
#include "autogemm/tuning.hpp"
#include "autogemm/version.hpp"
#include "autogemm/wgrad.hpp"
