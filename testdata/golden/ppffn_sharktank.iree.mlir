#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
#map1 = affine_map<(d0, d1, d2, d3) -> (d2, d3)>
#map2 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#map3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
module @ppffn_sharktank {
  func.func @main(%arg0: tensor<64x32xf32> {iree.abi.affinity = #hal.device.promise<@__device_0>} loc("blk.0.ffn.weight"), %arg1: tensor<64x32xf32> {iree.abi.affinity = #hal.device.promise<@__device_1>} loc("blk.0.ffn.weight"), %arg2: tensor<64x32xf32> {iree.abi.affinity = #hal.device.promise<@__device_0>} loc("blk.1.ffn.weight"), %arg3: tensor<64x32xf32> {iree.abi.affinity = #hal.device.promise<@__device_1>} loc("blk.1.ffn.weight"), %arg4: tensor<64x32xf32> {iree.abi.affinity = #hal.device.promise<@__device_2>} loc("blk.2.ffn.weight"), %arg5: tensor<64x32xf32> {iree.abi.affinity = #hal.device.promise<@__device_3>} loc("blk.2.ffn.weight"), %arg6: tensor<64x32xf32> {iree.abi.affinity = #hal.device.promise<@__device_2>} loc("blk.3.ffn.weight"), %arg7: tensor<64x32xf32> {iree.abi.affinity = #hal.device.promise<@__device_3>} loc("blk.3.ffn.weight"), %arg8: tensor<64x32xf32> {iree.abi.affinity = #hal.device.promise<@__device_4>} loc("blk.4.ffn.weight"), %arg9: tensor<64x32xf32> {iree.abi.affinity = #hal.device.promise<@__device_5>} loc("blk.4.ffn.weight"), %arg10: tensor<64x32xf32> {iree.abi.affinity = #hal.device.promise<@__device_4>} loc("blk.5.ffn.weight"), %arg11: tensor<64x32xf32> {iree.abi.affinity = #hal.device.promise<@__device_5>} loc("blk.5.ffn.weight"), %arg12: tensor<64x32xf32> {iree.abi.affinity = #hal.device.promise<@__device_6>} loc("blk.6.ffn.weight"), %arg13: tensor<64x32xf32> {iree.abi.affinity = #hal.device.promise<@__device_7>} loc("blk.6.ffn.weight"), %arg14: tensor<64x32xf32> {iree.abi.affinity = #hal.device.promise<@__device_6>} loc("blk.7.ffn.weight"), %arg15: tensor<64x32xf32> {iree.abi.affinity = #hal.device.promise<@__device_7>} loc("blk.7.ffn.weight"), %arg16: tensor<2x8x64xf32> {iree.abi.affinity = #hal.device.promise<@__device_0>} loc("x"), %arg17: tensor<2x8x64xf32> {iree.abi.affinity = #hal.device.promise<@__device_1>} loc("x")) -> (tensor<2x8x64xf32> {iree.abi.affinity = #hal.device.promise<@__device_6>}, tensor<2x8x64xf32> {iree.abi.affinity = #hal.device.promise<@__device_7>}) {
    %extracted_slice = tensor.extract_slice %arg16[0, 0, 0] [2, 8, 32] [1, 1, 1] : tensor<2x8x64xf32> to tensor<2x8x32xf32> loc("blk.0.partial")
    %cst = arith.constant 0.000000e+00 : f32 loc("blk.0.partial")
    %0 = tensor.empty() : tensor<2x8x64xf32> loc("blk.0.partial")
    %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<2x8x64xf32>) -> tensor<2x8x64xf32> loc("blk.0.partial")
    %2 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%extracted_slice, %arg0 : tensor<2x8x32xf32>, tensor<64x32xf32>) outs(%1 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32 loc("blk.0.partial"), %in_30: f32 loc("blk.0.partial"), %out: f32 loc("blk.0.partial")):
      %102 = arith.mulf %in, %in_30 : f32 loc("blk.0.partial")
      %103 = arith.addf %out, %102 : f32 loc("blk.0.partial")
      linalg.yield %103 : f32 loc("blk.0.partial")
    } -> tensor<2x8x64xf32> loc("blk.0.partial")
    %extracted_slice_0 = tensor.extract_slice %arg17[0, 0, 32] [2, 8, 32] [1, 1, 1] : tensor<2x8x64xf32> to tensor<2x8x32xf32> loc("blk.0.partial")
    %cst_1 = arith.constant 0.000000e+00 : f32 loc("blk.0.partial")
    %3 = tensor.empty() : tensor<2x8x64xf32> loc("blk.0.partial")
    %4 = linalg.fill ins(%cst_1 : f32) outs(%3 : tensor<2x8x64xf32>) -> tensor<2x8x64xf32> loc("blk.0.partial")
    %5 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%extracted_slice_0, %arg1 : tensor<2x8x32xf32>, tensor<64x32xf32>) outs(%4 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32 loc("blk.0.partial"), %in_30: f32 loc("blk.0.partial"), %out: f32 loc("blk.0.partial")):
      %102 = arith.mulf %in, %in_30 : f32 loc("blk.0.partial")
      %103 = arith.addf %out, %102 : f32 loc("blk.0.partial")
      linalg.yield %103 : f32 loc("blk.0.partial")
    } -> tensor<2x8x64xf32> loc("blk.0.partial")
    %6 = flow.tensor.transfer %5 : tensor<2x8x64xf32> to #hal.device.promise<@__device_0> loc("blk.0.y")
    %7 = tensor.empty() : tensor<2x8x64xf32> loc("blk.0.y")
    %8 = linalg.generic {indexing_maps = [#map3, #map3, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%2, %6 : tensor<2x8x64xf32>, tensor<2x8x64xf32>) outs(%7 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32 loc("blk.0.y"), %in_30: f32 loc("blk.0.y"), %out: f32 loc("blk.0.y")):
      %102 = arith.addf %in, %in_30 : f32 loc("blk.0.y")
      linalg.yield %102 : f32 loc("blk.0.y")
    } -> tensor<2x8x64xf32> loc("blk.0.y")
    %9 = flow.tensor.transfer %2 : tensor<2x8x64xf32> to #hal.device.promise<@__device_1> loc("blk.0.y")
    %10 = tensor.empty() : tensor<2x8x64xf32> loc("blk.0.y")
    %11 = linalg.generic {indexing_maps = [#map3, #map3, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%9, %5 : tensor<2x8x64xf32>, tensor<2x8x64xf32>) outs(%10 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32 loc("blk.0.y"), %in_30: f32 loc("blk.0.y"), %out: f32 loc("blk.0.y")):
      %102 = arith.addf %in, %in_30 : f32 loc("blk.0.y")
      linalg.yield %102 : f32 loc("blk.0.y")
    } -> tensor<2x8x64xf32> loc("blk.0.y")
    %extracted_slice_2 = tensor.extract_slice %8[0, 0, 0] [2, 8, 32] [1, 1, 1] : tensor<2x8x64xf32> to tensor<2x8x32xf32> loc("blk.1.partial")
    %cst_3 = arith.constant 0.000000e+00 : f32 loc("blk.1.partial")
    %12 = tensor.empty() : tensor<2x8x64xf32> loc("blk.1.partial")
    %13 = linalg.fill ins(%cst_3 : f32) outs(%12 : tensor<2x8x64xf32>) -> tensor<2x8x64xf32> loc("blk.1.partial")
    %14 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%extracted_slice_2, %arg2 : tensor<2x8x32xf32>, tensor<64x32xf32>) outs(%13 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32 loc("blk.1.partial"), %in_30: f32 loc("blk.1.partial"), %out: f32 loc("blk.1.partial")):
      %102 = arith.mulf %in, %in_30 : f32 loc("blk.1.partial")
      %103 = arith.addf %out, %102 : f32 loc("blk.1.partial")
      linalg.yield %103 : f32 loc("blk.1.partial")
    } -> tensor<2x8x64xf32> loc("blk.1.partial")
    %extracted_slice_4 = tensor.extract_slice %11[0, 0, 32] [2, 8, 32] [1, 1, 1] : tensor<2x8x64xf32> to tensor<2x8x32xf32> loc("blk.1.partial")
    %cst_5 = arith.constant 0.000000e+00 : f32 loc("blk.1.partial")
    %15 = tensor.empty() : tensor<2x8x64xf32> loc("blk.1.partial")
    %16 = linalg.fill ins(%cst_5 : f32) outs(%15 : tensor<2x8x64xf32>) -> tensor<2x8x64xf32> loc("blk.1.partial")
    %17 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%extracted_slice_4, %arg3 : tensor<2x8x32xf32>, tensor<64x32xf32>) outs(%16 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32 loc("blk.1.partial"), %in_30: f32 loc("blk.1.partial"), %out: f32 loc("blk.1.partial")):
      %102 = arith.mulf %in, %in_30 : f32 loc("blk.1.partial")
      %103 = arith.addf %out, %102 : f32 loc("blk.1.partial")
      linalg.yield %103 : f32 loc("blk.1.partial")
    } -> tensor<2x8x64xf32> loc("blk.1.partial")
    %18 = flow.tensor.transfer %17 : tensor<2x8x64xf32> to #hal.device.promise<@__device_0> loc("blk.1.y")
    %19 = tensor.empty() : tensor<2x8x64xf32> loc("blk.1.y")
    %20 = linalg.generic {indexing_maps = [#map3, #map3, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%14, %18 : tensor<2x8x64xf32>, tensor<2x8x64xf32>) outs(%19 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32 loc("blk.1.y"), %in_30: f32 loc("blk.1.y"), %out: f32 loc("blk.1.y")):
      %102 = arith.addf %in, %in_30 : f32 loc("blk.1.y")
      linalg.yield %102 : f32 loc("blk.1.y")
    } -> tensor<2x8x64xf32> loc("blk.1.y")
    %21 = flow.tensor.transfer %14 : tensor<2x8x64xf32> to #hal.device.promise<@__device_1> loc("blk.1.y")
    %22 = tensor.empty() : tensor<2x8x64xf32> loc("blk.1.y")
    %23 = linalg.generic {indexing_maps = [#map3, #map3, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%21, %17 : tensor<2x8x64xf32>, tensor<2x8x64xf32>) outs(%22 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32 loc("blk.1.y"), %in_30: f32 loc("blk.1.y"), %out: f32 loc("blk.1.y")):
      %102 = arith.addf %in, %in_30 : f32 loc("blk.1.y")
      linalg.yield %102 : f32 loc("blk.1.y")
    } -> tensor<2x8x64xf32> loc("blk.1.y")
    %24 = flow.tensor.transfer %20 : tensor<2x8x64xf32> to #hal.device.promise<@__device_2> loc("blk.1.y@2,3")
    %25 = flow.tensor.transfer %23 : tensor<2x8x64xf32> to #hal.device.promise<@__device_3> loc("blk.1.y@2,3")
    %extracted_slice_6 = tensor.extract_slice %24[0, 0, 0] [2, 8, 32] [1, 1, 1] : tensor<2x8x64xf32> to tensor<2x8x32xf32> loc("blk.2.partial")
    %cst_7 = arith.constant 0.000000e+00 : f32 loc("blk.2.partial")
    %26 = tensor.empty() : tensor<2x8x64xf32> loc("blk.2.partial")
    %27 = linalg.fill ins(%cst_7 : f32) outs(%26 : tensor<2x8x64xf32>) -> tensor<2x8x64xf32> loc("blk.2.partial")
    %28 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%extracted_slice_6, %arg4 : tensor<2x8x32xf32>, tensor<64x32xf32>) outs(%27 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32 loc("blk.2.partial"), %in_30: f32 loc("blk.2.partial"), %out: f32 loc("blk.2.partial")):
      %102 = arith.mulf %in, %in_30 : f32 loc("blk.2.partial")
      %103 = arith.addf %out, %102 : f32 loc("blk.2.partial")
      linalg.yield %103 : f32 loc("blk.2.partial")
    } -> tensor<2x8x64xf32> loc("blk.2.partial")
    %extracted_slice_8 = tensor.extract_slice %25[0, 0, 32] [2, 8, 32] [1, 1, 1] : tensor<2x8x64xf32> to tensor<2x8x32xf32> loc("blk.2.partial")
    %cst_9 = arith.constant 0.000000e+00 : f32 loc("blk.2.partial")
    %29 = tensor.empty() : tensor<2x8x64xf32> loc("blk.2.partial")
    %30 = linalg.fill ins(%cst_9 : f32) outs(%29 : tensor<2x8x64xf32>) -> tensor<2x8x64xf32> loc("blk.2.partial")
    %31 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%extracted_slice_8, %arg5 : tensor<2x8x32xf32>, tensor<64x32xf32>) outs(%30 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32 loc("blk.2.partial"), %in_30: f32 loc("blk.2.partial"), %out: f32 loc("blk.2.partial")):
      %102 = arith.mulf %in, %in_30 : f32 loc("blk.2.partial")
      %103 = arith.addf %out, %102 : f32 loc("blk.2.partial")
      linalg.yield %103 : f32 loc("blk.2.partial")
    } -> tensor<2x8x64xf32> loc("blk.2.partial")
    %32 = flow.tensor.transfer %31 : tensor<2x8x64xf32> to #hal.device.promise<@__device_2> loc("blk.2.y")
    %33 = tensor.empty() : tensor<2x8x64xf32> loc("blk.2.y")
    %34 = linalg.generic {indexing_maps = [#map3, #map3, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%28, %32 : tensor<2x8x64xf32>, tensor<2x8x64xf32>) outs(%33 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32 loc("blk.2.y"), %in_30: f32 loc("blk.2.y"), %out: f32 loc("blk.2.y")):
      %102 = arith.addf %in, %in_30 : f32 loc("blk.2.y")
      linalg.yield %102 : f32 loc("blk.2.y")
    } -> tensor<2x8x64xf32> loc("blk.2.y")
    %35 = flow.tensor.transfer %28 : tensor<2x8x64xf32> to #hal.device.promise<@__device_3> loc("blk.2.y")
    %36 = tensor.empty() : tensor<2x8x64xf32> loc("blk.2.y")
    %37 = linalg.generic {indexing_maps = [#map3, #map3, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%35, %31 : tensor<2x8x64xf32>, tensor<2x8x64xf32>) outs(%36 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32 loc("blk.2.y"), %in_30: f32 loc("blk.2.y"), %out: f32 loc("blk.2.y")):
      %102 = arith.addf %in, %in_30 : f32 loc("blk.2.y")
      linalg.yield %102 : f32 loc("blk.2.y")
    } -> tensor<2x8x64xf32> loc("blk.2.y")
    %extracted_slice_10 = tensor.extract_slice %34[0, 0, 0] [2, 8, 32] [1, 1, 1] : tensor<2x8x64xf32> to tensor<2x8x32xf32> loc("blk.3.partial")
    %cst_11 = arith.constant 0.000000e+00 : f32 loc("blk.3.partial")
    %38 = tensor.empty() : tensor<2x8x64xf32> loc("blk.3.partial")
    %39 = linalg.fill ins(%cst_11 : f32) outs(%38 : tensor<2x8x64xf32>) -> tensor<2x8x64xf32> loc("blk.3.partial")
    %40 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%extracted_slice_10, %arg6 : tensor<2x8x32xf32>, tensor<64x32xf32>) outs(%39 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32 loc("blk.3.partial"), %in_30: f32 loc("blk.3.partial"), %out: f32 loc("blk.3.partial")):
      %102 = arith.mulf %in, %in_30 : f32 loc("blk.3.partial")
      %103 = arith.addf %out, %102 : f32 loc("blk.3.partial")
      linalg.yield %103 : f32 loc("blk.3.partial")
    } -> tensor<2x8x64xf32> loc("blk.3.partial")
    %extracted_slice_12 = tensor.extract_slice %37[0, 0, 32] [2, 8, 32] [1, 1, 1] : tensor<2x8x64xf32> to tensor<2x8x32xf32> loc("blk.3.partial")
    %cst_13 = arith.constant 0.000000e+00 : f32 loc("blk.3.partial")
    %41 = tensor.empty() : tensor<2x8x64xf32> loc("blk.3.partial")
    %42 = linalg.fill ins(%cst_13 : f32) outs(%41 : tensor<2x8x64xf32>) -> tensor<2x8x64xf32> loc("blk.3.partial")
    %43 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%extracted_slice_12, %arg7 : tensor<2x8x32xf32>, tensor<64x32xf32>) outs(%42 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32 loc("blk.3.partial"), %in_30: f32 loc("blk.3.partial"), %out: f32 loc("blk.3.partial")):
      %102 = arith.mulf %in, %in_30 : f32 loc("blk.3.partial")
      %103 = arith.addf %out, %102 : f32 loc("blk.3.partial")
      linalg.yield %103 : f32 loc("blk.3.partial")
    } -> tensor<2x8x64xf32> loc("blk.3.partial")
    %44 = flow.tensor.transfer %43 : tensor<2x8x64xf32> to #hal.device.promise<@__device_2> loc("blk.3.y")
    %45 = tensor.empty() : tensor<2x8x64xf32> loc("blk.3.y")
    %46 = linalg.generic {indexing_maps = [#map3, #map3, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%40, %44 : tensor<2x8x64xf32>, tensor<2x8x64xf32>) outs(%45 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32 loc("blk.3.y"), %in_30: f32 loc("blk.3.y"), %out: f32 loc("blk.3.y")):
      %102 = arith.addf %in, %in_30 : f32 loc("blk.3.y")
      linalg.yield %102 : f32 loc("blk.3.y")
    } -> tensor<2x8x64xf32> loc("blk.3.y")
    %47 = flow.tensor.transfer %40 : tensor<2x8x64xf32> to #hal.device.promise<@__device_3> loc("blk.3.y")
    %48 = tensor.empty() : tensor<2x8x64xf32> loc("blk.3.y")
    %49 = linalg.generic {indexing_maps = [#map3, #map3, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%47, %43 : tensor<2x8x64xf32>, tensor<2x8x64xf32>) outs(%48 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32 loc("blk.3.y"), %in_30: f32 loc("blk.3.y"), %out: f32 loc("blk.3.y")):
      %102 = arith.addf %in, %in_30 : f32 loc("blk.3.y")
      linalg.yield %102 : f32 loc("blk.3.y")
    } -> tensor<2x8x64xf32> loc("blk.3.y")
    %50 = flow.tensor.transfer %46 : tensor<2x8x64xf32> to #hal.device.promise<@__device_4> loc("blk.3.y@4,5")
    %51 = flow.tensor.transfer %49 : tensor<2x8x64xf32> to #hal.device.promise<@__device_5> loc("blk.3.y@4,5")
    %extracted_slice_14 = tensor.extract_slice %50[0, 0, 0] [2, 8, 32] [1, 1, 1] : tensor<2x8x64xf32> to tensor<2x8x32xf32> loc("blk.4.partial")
    %cst_15 = arith.constant 0.000000e+00 : f32 loc("blk.4.partial")
    %52 = tensor.empty() : tensor<2x8x64xf32> loc("blk.4.partial")
    %53 = linalg.fill ins(%cst_15 : f32) outs(%52 : tensor<2x8x64xf32>) -> tensor<2x8x64xf32> loc("blk.4.partial")
    %54 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%extracted_slice_14, %arg8 : tensor<2x8x32xf32>, tensor<64x32xf32>) outs(%53 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32 loc("blk.4.partial"), %in_30: f32 loc("blk.4.partial"), %out: f32 loc("blk.4.partial")):
      %102 = arith.mulf %in, %in_30 : f32 loc("blk.4.partial")
      %103 = arith.addf %out, %102 : f32 loc("blk.4.partial")
      linalg.yield %103 : f32 loc("blk.4.partial")
    } -> tensor<2x8x64xf32> loc("blk.4.partial")
    %extracted_slice_16 = tensor.extract_slice %51[0, 0, 32] [2, 8, 32] [1, 1, 1] : tensor<2x8x64xf32> to tensor<2x8x32xf32> loc("blk.4.partial")
    %cst_17 = arith.constant 0.000000e+00 : f32 loc("blk.4.partial")
    %55 = tensor.empty() : tensor<2x8x64xf32> loc("blk.4.partial")
    %56 = linalg.fill ins(%cst_17 : f32) outs(%55 : tensor<2x8x64xf32>) -> tensor<2x8x64xf32> loc("blk.4.partial")
    %57 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%extracted_slice_16, %arg9 : tensor<2x8x32xf32>, tensor<64x32xf32>) outs(%56 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32 loc("blk.4.partial"), %in_30: f32 loc("blk.4.partial"), %out: f32 loc("blk.4.partial")):
      %102 = arith.mulf %in, %in_30 : f32 loc("blk.4.partial")
      %103 = arith.addf %out, %102 : f32 loc("blk.4.partial")
      linalg.yield %103 : f32 loc("blk.4.partial")
    } -> tensor<2x8x64xf32> loc("blk.4.partial")
    %58 = flow.tensor.transfer %57 : tensor<2x8x64xf32> to #hal.device.promise<@__device_4> loc("blk.4.y")
    %59 = tensor.empty() : tensor<2x8x64xf32> loc("blk.4.y")
    %60 = linalg.generic {indexing_maps = [#map3, #map3, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%54, %58 : tensor<2x8x64xf32>, tensor<2x8x64xf32>) outs(%59 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32 loc("blk.4.y"), %in_30: f32 loc("blk.4.y"), %out: f32 loc("blk.4.y")):
      %102 = arith.addf %in, %in_30 : f32 loc("blk.4.y")
      linalg.yield %102 : f32 loc("blk.4.y")
    } -> tensor<2x8x64xf32> loc("blk.4.y")
    %61 = flow.tensor.transfer %54 : tensor<2x8x64xf32> to #hal.device.promise<@__device_5> loc("blk.4.y")
    %62 = tensor.empty() : tensor<2x8x64xf32> loc("blk.4.y")
    %63 = linalg.generic {indexing_maps = [#map3, #map3, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%61, %57 : tensor<2x8x64xf32>, tensor<2x8x64xf32>) outs(%62 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32 loc("blk.4.y"), %in_30: f32 loc("blk.4.y"), %out: f32 loc("blk.4.y")):
      %102 = arith.addf %in, %in_30 : f32 loc("blk.4.y")
      linalg.yield %102 : f32 loc("blk.4.y")
    } -> tensor<2x8x64xf32> loc("blk.4.y")
    %extracted_slice_18 = tensor.extract_slice %60[0, 0, 0] [2, 8, 32] [1, 1, 1] : tensor<2x8x64xf32> to tensor<2x8x32xf32> loc("blk.5.partial")
    %cst_19 = arith.constant 0.000000e+00 : f32 loc("blk.5.partial")
    %64 = tensor.empty() : tensor<2x8x64xf32> loc("blk.5.partial")
    %65 = linalg.fill ins(%cst_19 : f32) outs(%64 : tensor<2x8x64xf32>) -> tensor<2x8x64xf32> loc("blk.5.partial")
    %66 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%extracted_slice_18, %arg10 : tensor<2x8x32xf32>, tensor<64x32xf32>) outs(%65 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32 loc("blk.5.partial"), %in_30: f32 loc("blk.5.partial"), %out: f32 loc("blk.5.partial")):
      %102 = arith.mulf %in, %in_30 : f32 loc("blk.5.partial")
      %103 = arith.addf %out, %102 : f32 loc("blk.5.partial")
      linalg.yield %103 : f32 loc("blk.5.partial")
    } -> tensor<2x8x64xf32> loc("blk.5.partial")
    %extracted_slice_20 = tensor.extract_slice %63[0, 0, 32] [2, 8, 32] [1, 1, 1] : tensor<2x8x64xf32> to tensor<2x8x32xf32> loc("blk.5.partial")
    %cst_21 = arith.constant 0.000000e+00 : f32 loc("blk.5.partial")
    %67 = tensor.empty() : tensor<2x8x64xf32> loc("blk.5.partial")
    %68 = linalg.fill ins(%cst_21 : f32) outs(%67 : tensor<2x8x64xf32>) -> tensor<2x8x64xf32> loc("blk.5.partial")
    %69 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%extracted_slice_20, %arg11 : tensor<2x8x32xf32>, tensor<64x32xf32>) outs(%68 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32 loc("blk.5.partial"), %in_30: f32 loc("blk.5.partial"), %out: f32 loc("blk.5.partial")):
      %102 = arith.mulf %in, %in_30 : f32 loc("blk.5.partial")
      %103 = arith.addf %out, %102 : f32 loc("blk.5.partial")
      linalg.yield %103 : f32 loc("blk.5.partial")
    } -> tensor<2x8x64xf32> loc("blk.5.partial")
    %70 = flow.tensor.transfer %69 : tensor<2x8x64xf32> to #hal.device.promise<@__device_4> loc("blk.5.y")
    %71 = tensor.empty() : tensor<2x8x64xf32> loc("blk.5.y")
    %72 = linalg.generic {indexing_maps = [#map3, #map3, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%66, %70 : tensor<2x8x64xf32>, tensor<2x8x64xf32>) outs(%71 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32 loc("blk.5.y"), %in_30: f32 loc("blk.5.y"), %out: f32 loc("blk.5.y")):
      %102 = arith.addf %in, %in_30 : f32 loc("blk.5.y")
      linalg.yield %102 : f32 loc("blk.5.y")
    } -> tensor<2x8x64xf32> loc("blk.5.y")
    %73 = flow.tensor.transfer %66 : tensor<2x8x64xf32> to #hal.device.promise<@__device_5> loc("blk.5.y")
    %74 = tensor.empty() : tensor<2x8x64xf32> loc("blk.5.y")
    %75 = linalg.generic {indexing_maps = [#map3, #map3, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%73, %69 : tensor<2x8x64xf32>, tensor<2x8x64xf32>) outs(%74 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32 loc("blk.5.y"), %in_30: f32 loc("blk.5.y"), %out: f32 loc("blk.5.y")):
      %102 = arith.addf %in, %in_30 : f32 loc("blk.5.y")
      linalg.yield %102 : f32 loc("blk.5.y")
    } -> tensor<2x8x64xf32> loc("blk.5.y")
    %76 = flow.tensor.transfer %72 : tensor<2x8x64xf32> to #hal.device.promise<@__device_6> loc("blk.5.y@6,7")
    %77 = flow.tensor.transfer %75 : tensor<2x8x64xf32> to #hal.device.promise<@__device_7> loc("blk.5.y@6,7")
    %extracted_slice_22 = tensor.extract_slice %76[0, 0, 0] [2, 8, 32] [1, 1, 1] : tensor<2x8x64xf32> to tensor<2x8x32xf32> loc("blk.6.partial")
    %cst_23 = arith.constant 0.000000e+00 : f32 loc("blk.6.partial")
    %78 = tensor.empty() : tensor<2x8x64xf32> loc("blk.6.partial")
    %79 = linalg.fill ins(%cst_23 : f32) outs(%78 : tensor<2x8x64xf32>) -> tensor<2x8x64xf32> loc("blk.6.partial")
    %80 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%extracted_slice_22, %arg12 : tensor<2x8x32xf32>, tensor<64x32xf32>) outs(%79 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32 loc("blk.6.partial"), %in_30: f32 loc("blk.6.partial"), %out: f32 loc("blk.6.partial")):
      %102 = arith.mulf %in, %in_30 : f32 loc("blk.6.partial")
      %103 = arith.addf %out, %102 : f32 loc("blk.6.partial")
      linalg.yield %103 : f32 loc("blk.6.partial")
    } -> tensor<2x8x64xf32> loc("blk.6.partial")
    %extracted_slice_24 = tensor.extract_slice %77[0, 0, 32] [2, 8, 32] [1, 1, 1] : tensor<2x8x64xf32> to tensor<2x8x32xf32> loc("blk.6.partial")
    %cst_25 = arith.constant 0.000000e+00 : f32 loc("blk.6.partial")
    %81 = tensor.empty() : tensor<2x8x64xf32> loc("blk.6.partial")
    %82 = linalg.fill ins(%cst_25 : f32) outs(%81 : tensor<2x8x64xf32>) -> tensor<2x8x64xf32> loc("blk.6.partial")
    %83 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%extracted_slice_24, %arg13 : tensor<2x8x32xf32>, tensor<64x32xf32>) outs(%82 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32 loc("blk.6.partial"), %in_30: f32 loc("blk.6.partial"), %out: f32 loc("blk.6.partial")):
      %102 = arith.mulf %in, %in_30 : f32 loc("blk.6.partial")
      %103 = arith.addf %out, %102 : f32 loc("blk.6.partial")
      linalg.yield %103 : f32 loc("blk.6.partial")
    } -> tensor<2x8x64xf32> loc("blk.6.partial")
    %84 = flow.tensor.transfer %83 : tensor<2x8x64xf32> to #hal.device.promise<@__device_6> loc("blk.6.y")
    %85 = tensor.empty() : tensor<2x8x64xf32> loc("blk.6.y")
    %86 = linalg.generic {indexing_maps = [#map3, #map3, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%80, %84 : tensor<2x8x64xf32>, tensor<2x8x64xf32>) outs(%85 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32 loc("blk.6.y"), %in_30: f32 loc("blk.6.y"), %out: f32 loc("blk.6.y")):
      %102 = arith.addf %in, %in_30 : f32 loc("blk.6.y")
      linalg.yield %102 : f32 loc("blk.6.y")
    } -> tensor<2x8x64xf32> loc("blk.6.y")
    %87 = flow.tensor.transfer %80 : tensor<2x8x64xf32> to #hal.device.promise<@__device_7> loc("blk.6.y")
    %88 = tensor.empty() : tensor<2x8x64xf32> loc("blk.6.y")
    %89 = linalg.generic {indexing_maps = [#map3, #map3, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%87, %83 : tensor<2x8x64xf32>, tensor<2x8x64xf32>) outs(%88 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32 loc("blk.6.y"), %in_30: f32 loc("blk.6.y"), %out: f32 loc("blk.6.y")):
      %102 = arith.addf %in, %in_30 : f32 loc("blk.6.y")
      linalg.yield %102 : f32 loc("blk.6.y")
    } -> tensor<2x8x64xf32> loc("blk.6.y")
    %extracted_slice_26 = tensor.extract_slice %86[0, 0, 0] [2, 8, 32] [1, 1, 1] : tensor<2x8x64xf32> to tensor<2x8x32xf32> loc("blk.7.partial")
    %cst_27 = arith.constant 0.000000e+00 : f32 loc("blk.7.partial")
    %90 = tensor.empty() : tensor<2x8x64xf32> loc("blk.7.partial")
    %91 = linalg.fill ins(%cst_27 : f32) outs(%90 : tensor<2x8x64xf32>) -> tensor<2x8x64xf32> loc("blk.7.partial")
    %92 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%extracted_slice_26, %arg14 : tensor<2x8x32xf32>, tensor<64x32xf32>) outs(%91 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32 loc("blk.7.partial"), %in_30: f32 loc("blk.7.partial"), %out: f32 loc("blk.7.partial")):
      %102 = arith.mulf %in, %in_30 : f32 loc("blk.7.partial")
      %103 = arith.addf %out, %102 : f32 loc("blk.7.partial")
      linalg.yield %103 : f32 loc("blk.7.partial")
    } -> tensor<2x8x64xf32> loc("blk.7.partial")
    %extracted_slice_28 = tensor.extract_slice %89[0, 0, 32] [2, 8, 32] [1, 1, 1] : tensor<2x8x64xf32> to tensor<2x8x32xf32> loc("blk.7.partial")
    %cst_29 = arith.constant 0.000000e+00 : f32 loc("blk.7.partial")
    %93 = tensor.empty() : tensor<2x8x64xf32> loc("blk.7.partial")
    %94 = linalg.fill ins(%cst_29 : f32) outs(%93 : tensor<2x8x64xf32>) -> tensor<2x8x64xf32> loc("blk.7.partial")
    %95 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%extracted_slice_28, %arg15 : tensor<2x8x32xf32>, tensor<64x32xf32>) outs(%94 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32 loc("blk.7.partial"), %in_30: f32 loc("blk.7.partial"), %out: f32 loc("blk.7.partial")):
      %102 = arith.mulf %in, %in_30 : f32 loc("blk.7.partial")
      %103 = arith.addf %out, %102 : f32 loc("blk.7.partial")
      linalg.yield %103 : f32 loc("blk.7.partial")
    } -> tensor<2x8x64xf32> loc("blk.7.partial")
    %96 = flow.tensor.transfer %95 : tensor<2x8x64xf32> to #hal.device.promise<@__device_6> loc("blk.7.y")
    %97 = tensor.empty() : tensor<2x8x64xf32> loc("blk.7.y")
    %98 = linalg.generic {indexing_maps = [#map3, #map3, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%92, %96 : tensor<2x8x64xf32>, tensor<2x8x64xf32>) outs(%97 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32 loc("blk.7.y"), %in_30: f32 loc("blk.7.y"), %out: f32 loc("blk.7.y")):
      %102 = arith.addf %in, %in_30 : f32 loc("blk.7.y")
      linalg.yield %102 : f32 loc("blk.7.y")
    } -> tensor<2x8x64xf32> loc("blk.7.y")
    %99 = flow.tensor.transfer %92 : tensor<2x8x64xf32> to #hal.device.promise<@__device_7> loc("blk.7.y")
    %100 = tensor.empty() : tensor<2x8x64xf32> loc("blk.7.y")
    %101 = linalg.generic {indexing_maps = [#map3, #map3, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%99, %95 : tensor<2x8x64xf32>, tensor<2x8x64xf32>) outs(%100 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32 loc("blk.7.y"), %in_30: f32 loc("blk.7.y"), %out: f32 loc("blk.7.y")):
      %102 = arith.addf %in, %in_30 : f32 loc("blk.7.y")
      linalg.yield %102 : f32 loc("blk.7.y")
    } -> tensor<2x8x64xf32> loc("blk.7.y")
    return %98, %101 : tensor<2x8x64xf32>, tensor<2x8x64xf32> loc("ppffn_sharktank")
  } loc("ppffn_sharktank")
} loc("ppffn_sharktank")

