#map = affine_map<(d0, d1) -> (d0, d1)>
module @tp_ffn {
  func.func @main(%arg0: tensor<64x128xf32> {iree.abi.affinity = #hal.device.promise<@__device_0>} loc("ffn_up.weight"), %arg1: tensor<64x128xf32> {iree.abi.affinity = #hal.device.promise<@__device_1>} loc("ffn_up.weight"), %arg2: tensor<128x64xf32> {iree.abi.affinity = #hal.device.promise<@__device_0>} loc("ffn_down.weight"), %arg3: tensor<128x64xf32> {iree.abi.affinity = #hal.device.promise<@__device_1>} loc("ffn_down.weight"), %arg4: tensor<8x64xf32> {iree.abi.affinity = #hal.device.promise<@__device_0>} loc("x"), %arg5: tensor<8x64xf32> {iree.abi.affinity = #hal.device.promise<@__device_1>} loc("x")) -> (tensor<8x64xf32> {iree.abi.affinity = #hal.device.promise<@__device_0>}, tensor<8x64xf32> {iree.abi.affinity = #hal.device.promise<@__device_1>}) {
    %cst = arith.constant 0.000000e+00 : f32 loc("h")
    %0 = tensor.empty() : tensor<8x128xf32> loc("h")
    %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<8x128xf32>) -> tensor<8x128xf32> loc("h")
    %2 = linalg.matmul ins(%arg4, %arg0 : tensor<8x64xf32>, tensor<64x128xf32>) outs(%1 : tensor<8x128xf32>) -> tensor<8x128xf32> loc("h")
    %cst_0 = arith.constant 0.000000e+00 : f32 loc("h")
    %3 = tensor.empty() : tensor<8x128xf32> loc("h")
    %4 = linalg.fill ins(%cst_0 : f32) outs(%3 : tensor<8x128xf32>) -> tensor<8x128xf32> loc("h")
    %5 = linalg.matmul ins(%arg5, %arg1 : tensor<8x64xf32>, tensor<64x128xf32>) outs(%4 : tensor<8x128xf32>) -> tensor<8x128xf32> loc("h")
    %6 = tensor.empty() : tensor<8x128xf32> loc("a")
    %7 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%2 : tensor<8x128xf32>) outs(%6 : tensor<8x128xf32>) {
    ^bb0(%in: f32 loc("a"), %out: f32 loc("a")):
      %cst_3 = arith.constant 0.707106769 : f32 loc("a")
      %22 = arith.mulf %in, %cst_3 : f32 loc("a")
      %23 = math.erf %22 : f32 loc("a")
      %cst_4 = arith.constant 1.000000e+00 : f32 loc("a")
      %24 = arith.addf %cst_4, %23 : f32 loc("a")
      %cst_5 = arith.constant 5.000000e-01 : f32 loc("a")
      %25 = arith.mulf %in, %cst_5 : f32 loc("a")
      %26 = arith.mulf %25, %24 : f32 loc("a")
      linalg.yield %26 : f32 loc("a")
    } -> tensor<8x128xf32> loc("a")
    %8 = tensor.empty() : tensor<8x128xf32> loc("a")
    %9 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%5 : tensor<8x128xf32>) outs(%8 : tensor<8x128xf32>) {
    ^bb0(%in: f32 loc("a"), %out: f32 loc("a")):
      %cst_3 = arith.constant 0.707106769 : f32 loc("a")
      %22 = arith.mulf %in, %cst_3 : f32 loc("a")
      %23 = math.erf %22 : f32 loc("a")
      %cst_4 = arith.constant 1.000000e+00 : f32 loc("a")
      %24 = arith.addf %cst_4, %23 : f32 loc("a")
      %cst_5 = arith.constant 5.000000e-01 : f32 loc("a")
      %25 = arith.mulf %in, %cst_5 : f32 loc("a")
      %26 = arith.mulf %25, %24 : f32 loc("a")
      linalg.yield %26 : f32 loc("a")
    } -> tensor<8x128xf32> loc("a")
    %cst_1 = arith.constant 0.000000e+00 : f32 loc("partial")
    %10 = tensor.empty() : tensor<8x64xf32> loc("partial")
    %11 = linalg.fill ins(%cst_1 : f32) outs(%10 : tensor<8x64xf32>) -> tensor<8x64xf32> loc("partial")
    %12 = linalg.matmul ins(%7, %arg2 : tensor<8x128xf32>, tensor<128x64xf32>) outs(%11 : tensor<8x64xf32>) -> tensor<8x64xf32> loc("partial")
    %cst_2 = arith.constant 0.000000e+00 : f32 loc("partial")
    %13 = tensor.empty() : tensor<8x64xf32> loc("partial")
    %14 = linalg.fill ins(%cst_2 : f32) outs(%13 : tensor<8x64xf32>) -> tensor<8x64xf32> loc("partial")
    %15 = linalg.matmul ins(%9, %arg3 : tensor<8x128xf32>, tensor<128x64xf32>) outs(%14 : tensor<8x64xf32>) -> tensor<8x64xf32> loc("partial")
    %16 = flow.tensor.transfer %15 : tensor<8x64xf32> to #hal.device.promise<@__device_0> loc("y")
    %17 = tensor.empty() : tensor<8x64xf32> loc("y")
    %18 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%12, %16 : tensor<8x64xf32>, tensor<8x64xf32>) outs(%17 : tensor<8x64xf32>) {
    ^bb0(%in: f32 loc("y"), %in_3: f32 loc("y"), %out: f32 loc("y")):
      %22 = arith.addf %in, %in_3 : f32 loc("y")
      linalg.yield %22 : f32 loc("y")
    } -> tensor<8x64xf32> loc("y")
    %19 = flow.tensor.transfer %12 : tensor<8x64xf32> to #hal.device.promise<@__device_1> loc("y")
    %20 = tensor.empty() : tensor<8x64xf32> loc("y")
    %21 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%19, %15 : tensor<8x64xf32>, tensor<8x64xf32>) outs(%20 : tensor<8x64xf32>) {
    ^bb0(%in: f32 loc("y"), %in_3: f32 loc("y"), %out: f32 loc("y")):
      %22 = arith.addf %in, %in_3 : f32 loc("y")
      linalg.yield %22 : f32 loc("y")
    } -> tensor<8x64xf32> loc("y")
    return %18, %21 : tensor<8x64xf32>, tensor<8x64xf32> loc("tp_ffn")
  } loc("tp_ffn")
} loc("tp_ffn")

