#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
#map1 = affine_map<(d0, d1, d2, d3) -> (d2, d3)>
#map2 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#map3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
module @ppffn_sharktank {
  util.global private @"blk.0.ffn.weight.shard.0" {stream.affinity = #hal.device.promise<@__device_0>} = #flow.parameter.named<"model"::"blk.0.ffn.weight.shard.0"> : tensor<64x32xf32> loc("blk.0.ffn.weight")
  util.global private @"blk.0.ffn.weight.shard.1" {stream.affinity = #hal.device.promise<@__device_1>} = #flow.parameter.named<"model"::"blk.0.ffn.weight.shard.1"> : tensor<64x32xf32> loc("blk.0.ffn.weight")
  util.global private @"blk.1.ffn.weight.shard.0" {stream.affinity = #hal.device.promise<@__device_0>} = #flow.parameter.named<"model"::"blk.1.ffn.weight.shard.0"> : tensor<64x32xf32> loc("blk.1.ffn.weight")
  util.global private @"blk.1.ffn.weight.shard.1" {stream.affinity = #hal.device.promise<@__device_1>} = #flow.parameter.named<"model"::"blk.1.ffn.weight.shard.1"> : tensor<64x32xf32> loc("blk.1.ffn.weight")
  util.global private @"blk.2.ffn.weight.shard.0" {stream.affinity = #hal.device.promise<@__device_2>} = #flow.parameter.named<"model"::"blk.2.ffn.weight.shard.0"> : tensor<64x32xf32> loc("blk.2.ffn.weight")
  util.global private @"blk.2.ffn.weight.shard.1" {stream.affinity = #hal.device.promise<@__device_3>} = #flow.parameter.named<"model"::"blk.2.ffn.weight.shard.1"> : tensor<64x32xf32> loc("blk.2.ffn.weight")
  util.global private @"blk.3.ffn.weight.shard.0" {stream.affinity = #hal.device.promise<@__device_2>} = #flow.parameter.named<"model"::"blk.3.ffn.weight.shard.0"> : tensor<64x32xf32> loc("blk.3.ffn.weight")
  util.global private @"blk.3.ffn.weight.shard.1" {stream.affinity = #hal.device.promise<@__device_3>} = #flow.parameter.named<"model"::"blk.3.ffn.weight.shard.1"> : tensor<64x32xf32> loc("blk.3.ffn.weight")
  util.global private @"blk.4.ffn.weight.shard.0" {stream.affinity = #hal.device.promise<@__device_4>} = #flow.parameter.named<"model"::"blk.4.ffn.weight.shard.0"> : tensor<64x32xf32> loc("blk.4.ffn.weight")
  util.global private @"blk.4.ffn.weight.shard.1" {stream.affinity = #hal.device.promise<@__device_5>} = #flow.parameter.named<"model"::"blk.4.ffn.weight.shard.1"> : tensor<64x32xf32> loc("blk.4.ffn.weight")
  util.global private @"blk.5.ffn.weight.shard.0" {stream.affinity = #hal.device.promise<@__device_4>} = #flow.parameter.named<"model"::"blk.5.ffn.weight.shard.0"> : tensor<64x32xf32> loc("blk.5.ffn.weight")
  util.global private @"blk.5.ffn.weight.shard.1" {stream.affinity = #hal.device.promise<@__device_5>} = #flow.parameter.named<"model"::"blk.5.ffn.weight.shard.1"> : tensor<64x32xf32> loc("blk.5.ffn.weight")
  util.global private @"blk.6.ffn.weight.shard.0" {stream.affinity = #hal.device.promise<@__device_6>} = #flow.parameter.named<"model"::"blk.6.ffn.weight.shard.0"> : tensor<64x32xf32> loc("blk.6.ffn.weight")
  util.global private @"blk.6.ffn.weight.shard.1" {stream.affinity = #hal.device.promise<@__device_7>} = #flow.parameter.named<"model"::"blk.6.ffn.weight.shard.1"> : tensor<64x32xf32> loc("blk.6.ffn.weight")
  util.global private @"blk.7.ffn.weight.shard.0" {stream.affinity = #hal.device.promise<@__device_6>} = #flow.parameter.named<"model"::"blk.7.ffn.weight.shard.0"> : tensor<64x32xf32> loc("blk.7.ffn.weight")
  util.global private @"blk.7.ffn.weight.shard.1" {stream.affinity = #hal.device.promise<@__device_7>} = #flow.parameter.named<"model"::"blk.7.ffn.weight.shard.1"> : tensor<64x32xf32> loc("blk.7.ffn.weight")
  func.func @main(%arg0: tensor<2x8x64xf32> {iree.abi.affinity = #hal.device.promise<@__device_0>} loc("x"), %arg1: tensor<2x8x64xf32> {iree.abi.affinity = #hal.device.promise<@__device_1>} loc("x")) -> (tensor<2x8x64xf32> {iree.abi.affinity = #hal.device.promise<@__device_6>}, tensor<2x8x64xf32> {iree.abi.affinity = #hal.device.promise<@__device_7>}) {
    %0 = util.global.load @blk.0.ffn.weight.shard.0 : tensor<64x32xf32> loc("blk.0.ffn.weight")
    %1 = util.global.load @blk.0.ffn.weight.shard.1 : tensor<64x32xf32> loc("blk.0.ffn.weight")
    %2 = util.global.load @blk.1.ffn.weight.shard.0 : tensor<64x32xf32> loc("blk.1.ffn.weight")
    %3 = util.global.load @blk.1.ffn.weight.shard.1 : tensor<64x32xf32> loc("blk.1.ffn.weight")
    %4 = util.global.load @blk.2.ffn.weight.shard.0 : tensor<64x32xf32> loc("blk.2.ffn.weight")
    %5 = util.global.load @blk.2.ffn.weight.shard.1 : tensor<64x32xf32> loc("blk.2.ffn.weight")
    %6 = util.global.load @blk.3.ffn.weight.shard.0 : tensor<64x32xf32> loc("blk.3.ffn.weight")
    %7 = util.global.load @blk.3.ffn.weight.shard.1 : tensor<64x32xf32> loc("blk.3.ffn.weight")
    %8 = util.global.load @blk.4.ffn.weight.shard.0 : tensor<64x32xf32> loc("blk.4.ffn.weight")
    %9 = util.global.load @blk.4.ffn.weight.shard.1 : tensor<64x32xf32> loc("blk.4.ffn.weight")
    %10 = util.global.load @blk.5.ffn.weight.shard.0 : tensor<64x32xf32> loc("blk.5.ffn.weight")
    %11 = util.global.load @blk.5.ffn.weight.shard.1 : tensor<64x32xf32> loc("blk.5.ffn.weight")
    %12 = util.global.load @blk.6.ffn.weight.shard.0 : tensor<64x32xf32> loc("blk.6.ffn.weight")
    %13 = util.global.load @blk.6.ffn.weight.shard.1 : tensor<64x32xf32> loc("blk.6.ffn.weight")
    %14 = util.global.load @blk.7.ffn.weight.shard.0 : tensor<64x32xf32> loc("blk.7.ffn.weight")
    %15 = util.global.load @blk.7.ffn.weight.shard.1 : tensor<64x32xf32> loc("blk.7.ffn.weight")
    %extracted_slice = tensor.extract_slice %arg0[0, 0, 0] [2, 8, 32] [1, 1, 1] : tensor<2x8x64xf32> to tensor<2x8x32xf32> loc("blk.0.partial")
    %cst = arith.constant 0.000000e+00 : f32 loc("blk.0.partial")
    %16 = tensor.empty() : tensor<2x8x64xf32> loc("blk.0.partial")
    %17 = linalg.fill ins(%cst : f32) outs(%16 : tensor<2x8x64xf32>) -> tensor<2x8x64xf32> loc("blk.0.partial")
    %18 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%extracted_slice, %0 : tensor<2x8x32xf32>, tensor<64x32xf32>) outs(%17 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32 loc("blk.0.partial"), %in_30: f32 loc("blk.0.partial"), %out: f32 loc("blk.0.partial")):
      %118 = arith.mulf %in, %in_30 : f32 loc("blk.0.partial")
      %119 = arith.addf %out, %118 : f32 loc("blk.0.partial")
      linalg.yield %119 : f32 loc("blk.0.partial")
    } -> tensor<2x8x64xf32> loc("blk.0.partial")
    %extracted_slice_0 = tensor.extract_slice %arg1[0, 0, 32] [2, 8, 32] [1, 1, 1] : tensor<2x8x64xf32> to tensor<2x8x32xf32> loc("blk.0.partial")
    %cst_1 = arith.constant 0.000000e+00 : f32 loc("blk.0.partial")
    %19 = tensor.empty() : tensor<2x8x64xf32> loc("blk.0.partial")
    %20 = linalg.fill ins(%cst_1 : f32) outs(%19 : tensor<2x8x64xf32>) -> tensor<2x8x64xf32> loc("blk.0.partial")
    %21 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%extracted_slice_0, %1 : tensor<2x8x32xf32>, tensor<64x32xf32>) outs(%20 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32 loc("blk.0.partial"), %in_30: f32 loc("blk.0.partial"), %out: f32 loc("blk.0.partial")):
      %118 = arith.mulf %in, %in_30 : f32 loc("blk.0.partial")
      %119 = arith.addf %out, %118 : f32 loc("blk.0.partial")
      linalg.yield %119 : f32 loc("blk.0.partial")
    } -> tensor<2x8x64xf32> loc("blk.0.partial")
    %22 = flow.tensor.transfer %21 : tensor<2x8x64xf32> to #hal.device.promise<@__device_0> loc("blk.0.y")
    %23 = tensor.empty() : tensor<2x8x64xf32> loc("blk.0.y")
    %24 = linalg.generic {indexing_maps = [#map3, #map3, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%18, %22 : tensor<2x8x64xf32>, tensor<2x8x64xf32>) outs(%23 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32 loc("blk.0.y"), %in_30: f32 loc("blk.0.y"), %out: f32 loc("blk.0.y")):
      %118 = arith.addf %in, %in_30 : f32 loc("blk.0.y")
      linalg.yield %118 : f32 loc("blk.0.y")
    } -> tensor<2x8x64xf32> loc("blk.0.y")
    %25 = flow.tensor.transfer %18 : tensor<2x8x64xf32> to #hal.device.promise<@__device_1> loc("blk.0.y")
    %26 = tensor.empty() : tensor<2x8x64xf32> loc("blk.0.y")
    %27 = linalg.generic {indexing_maps = [#map3, #map3, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%25, %21 : tensor<2x8x64xf32>, tensor<2x8x64xf32>) outs(%26 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32 loc("blk.0.y"), %in_30: f32 loc("blk.0.y"), %out: f32 loc("blk.0.y")):
      %118 = arith.addf %in, %in_30 : f32 loc("blk.0.y")
      linalg.yield %118 : f32 loc("blk.0.y")
    } -> tensor<2x8x64xf32> loc("blk.0.y")
    %extracted_slice_2 = tensor.extract_slice %24[0, 0, 0] [2, 8, 32] [1, 1, 1] : tensor<2x8x64xf32> to tensor<2x8x32xf32> loc("blk.1.partial")
    %cst_3 = arith.constant 0.000000e+00 : f32 loc("blk.1.partial")
    %28 = tensor.empty() : tensor<2x8x64xf32> loc("blk.1.partial")
    %29 = linalg.fill ins(%cst_3 : f32) outs(%28 : tensor<2x8x64xf32>) -> tensor<2x8x64xf32> loc("blk.1.partial")
    %30 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%extracted_slice_2, %2 : tensor<2x8x32xf32>, tensor<64x32xf32>) outs(%29 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32 loc("blk.1.partial"), %in_30: f32 loc("blk.1.partial"), %out: f32 loc("blk.1.partial")):
      %118 = arith.mulf %in, %in_30 : f32 loc("blk.1.partial")
      %119 = arith.addf %out, %118 : f32 loc("blk.1.partial")
      linalg.yield %119 : f32 loc("blk.1.partial")
    } -> tensor<2x8x64xf32> loc("blk.1.partial")
    %extracted_slice_4 = tensor.extract_slice %27[0, 0, 32] [2, 8, 32] [1, 1, 1] : tensor<2x8x64xf32> to tensor<2x8x32xf32> loc("blk.1.partial")
    %cst_5 = arith.constant 0.000000e+00 : f32 loc("blk.1.partial")
    %31 = tensor.empty() : tensor<2x8x64xf32> loc("blk.1.partial")
    %32 = linalg.fill ins(%cst_5 : f32) outs(%31 : tensor<2x8x64xf32>) -> tensor<2x8x64xf32> loc("blk.1.partial")
    %33 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%extracted_slice_4, %3 : tensor<2x8x32xf32>, tensor<64x32xf32>) outs(%32 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32 loc("blk.1.partial"), %in_30: f32 loc("blk.1.partial"), %out: f32 loc("blk.1.partial")):
      %118 = arith.mulf %in, %in_30 : f32 loc("blk.1.partial")
      %119 = arith.addf %out, %118 : f32 loc("blk.1.partial")
      linalg.yield %119 : f32 loc("blk.1.partial")
    } -> tensor<2x8x64xf32> loc("blk.1.partial")
    %34 = flow.tensor.transfer %33 : tensor<2x8x64xf32> to #hal.device.promise<@__device_0> loc("blk.1.y")
    %35 = tensor.empty() : tensor<2x8x64xf32> loc("blk.1.y")
    %36 = linalg.generic {indexing_maps = [#map3, #map3, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%30, %34 : tensor<2x8x64xf32>, tensor<2x8x64xf32>) outs(%35 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32 loc("blk.1.y"), %in_30: f32 loc("blk.1.y"), %out: f32 loc("blk.1.y")):
      %118 = arith.addf %in, %in_30 : f32 loc("blk.1.y")
      linalg.yield %118 : f32 loc("blk.1.y")
    } -> tensor<2x8x64xf32> loc("blk.1.y")
    %37 = flow.tensor.transfer %30 : tensor<2x8x64xf32> to #hal.device.promise<@__device_1> loc("blk.1.y")
    %38 = tensor.empty() : tensor<2x8x64xf32> loc("blk.1.y")
    %39 = linalg.generic {indexing_maps = [#map3, #map3, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%37, %33 : tensor<2x8x64xf32>, tensor<2x8x64xf32>) outs(%38 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32 loc("blk.1.y"), %in_30: f32 loc("blk.1.y"), %out: f32 loc("blk.1.y")):
      %118 = arith.addf %in, %in_30 : f32 loc("blk.1.y")
      linalg.yield %118 : f32 loc("blk.1.y")
    } -> tensor<2x8x64xf32> loc("blk.1.y")
    %40 = flow.tensor.transfer %36 : tensor<2x8x64xf32> to #hal.device.promise<@__device_2> loc("blk.1.y@2,3")
    %41 = flow.tensor.transfer %39 : tensor<2x8x64xf32> to #hal.device.promise<@__device_3> loc("blk.1.y@2,3")
    %extracted_slice_6 = tensor.extract_slice %40[0, 0, 0] [2, 8, 32] [1, 1, 1] : tensor<2x8x64xf32> to tensor<2x8x32xf32> loc("blk.2.partial")
    %cst_7 = arith.constant 0.000000e+00 : f32 loc("blk.2.partial")
    %42 = tensor.empty() : tensor<2x8x64xf32> loc("blk.2.partial")
    %43 = linalg.fill ins(%cst_7 : f32) outs(%42 : tensor<2x8x64xf32>) -> tensor<2x8x64xf32> loc("blk.2.partial")
    %44 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%extracted_slice_6, %4 : tensor<2x8x32xf32>, tensor<64x32xf32>) outs(%43 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32 loc("blk.2.partial"), %in_30: f32 loc("blk.2.partial"), %out: f32 loc("blk.2.partial")):
      %118 = arith.mulf %in, %in_30 : f32 loc("blk.2.partial")
      %119 = arith.addf %out, %118 : f32 loc("blk.2.partial")
      linalg.yield %119 : f32 loc("blk.2.partial")
    } -> tensor<2x8x64xf32> loc("blk.2.partial")
    %extracted_slice_8 = tensor.extract_slice %41[0, 0, 32] [2, 8, 32] [1, 1, 1] : tensor<2x8x64xf32> to tensor<2x8x32xf32> loc("blk.2.partial")
    %cst_9 = arith.constant 0.000000e+00 : f32 loc("blk.2.partial")
    %45 = tensor.empty() : tensor<2x8x64xf32> loc("blk.2.partial")
    %46 = linalg.fill ins(%cst_9 : f32) outs(%45 : tensor<2x8x64xf32>) -> tensor<2x8x64xf32> loc("blk.2.partial")
    %47 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%extracted_slice_8, %5 : tensor<2x8x32xf32>, tensor<64x32xf32>) outs(%46 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32 loc("blk.2.partial"), %in_30: f32 loc("blk.2.partial"), %out: f32 loc("blk.2.partial")):
      %118 = arith.mulf %in, %in_30 : f32 loc("blk.2.partial")
      %119 = arith.addf %out, %118 : f32 loc("blk.2.partial")
      linalg.yield %119 : f32 loc("blk.2.partial")
    } -> tensor<2x8x64xf32> loc("blk.2.partial")
    %48 = flow.tensor.transfer %47 : tensor<2x8x64xf32> to #hal.device.promise<@__device_2> loc("blk.2.y")
    %49 = tensor.empty() : tensor<2x8x64xf32> loc("blk.2.y")
    %50 = linalg.generic {indexing_maps = [#map3, #map3, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%44, %48 : tensor<2x8x64xf32>, tensor<2x8x64xf32>) outs(%49 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32 loc("blk.2.y"), %in_30: f32 loc("blk.2.y"), %out: f32 loc("blk.2.y")):
      %118 = arith.addf %in, %in_30 : f32 loc("blk.2.y")
      linalg.yield %118 : f32 loc("blk.2.y")
    } -> tensor<2x8x64xf32> loc("blk.2.y")
    %51 = flow.tensor.transfer %44 : tensor<2x8x64xf32> to #hal.device.promise<@__device_3> loc("blk.2.y")
    %52 = tensor.empty() : tensor<2x8x64xf32> loc("blk.2.y")
    %53 = linalg.generic {indexing_maps = [#map3, #map3, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%51, %47 : tensor<2x8x64xf32>, tensor<2x8x64xf32>) outs(%52 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32 loc("blk.2.y"), %in_30: f32 loc("blk.2.y"), %out: f32 loc("blk.2.y")):
      %118 = arith.addf %in, %in_30 : f32 loc("blk.2.y")
      linalg.yield %118 : f32 loc("blk.2.y")
    } -> tensor<2x8x64xf32> loc("blk.2.y")
    %extracted_slice_10 = tensor.extract_slice %50[0, 0, 0] [2, 8, 32] [1, 1, 1] : tensor<2x8x64xf32> to tensor<2x8x32xf32> loc("blk.3.partial")
    %cst_11 = arith.constant 0.000000e+00 : f32 loc("blk.3.partial")
    %54 = tensor.empty() : tensor<2x8x64xf32> loc("blk.3.partial")
    %55 = linalg.fill ins(%cst_11 : f32) outs(%54 : tensor<2x8x64xf32>) -> tensor<2x8x64xf32> loc("blk.3.partial")
    %56 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%extracted_slice_10, %6 : tensor<2x8x32xf32>, tensor<64x32xf32>) outs(%55 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32 loc("blk.3.partial"), %in_30: f32 loc("blk.3.partial"), %out: f32 loc("blk.3.partial")):
      %118 = arith.mulf %in, %in_30 : f32 loc("blk.3.partial")
      %119 = arith.addf %out, %118 : f32 loc("blk.3.partial")
      linalg.yield %119 : f32 loc("blk.3.partial")
    } -> tensor<2x8x64xf32> loc("blk.3.partial")
    %extracted_slice_12 = tensor.extract_slice %53[0, 0, 32] [2, 8, 32] [1, 1, 1] : tensor<2x8x64xf32> to tensor<2x8x32xf32> loc("blk.3.partial")
    %cst_13 = arith.constant 0.000000e+00 : f32 loc("blk.3.partial")
    %57 = tensor.empty() : tensor<2x8x64xf32> loc("blk.3.partial")
    %58 = linalg.fill ins(%cst_13 : f32) outs(%57 : tensor<2x8x64xf32>) -> tensor<2x8x64xf32> loc("blk.3.partial")
    %59 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%extracted_slice_12, %7 : tensor<2x8x32xf32>, tensor<64x32xf32>) outs(%58 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32 loc("blk.3.partial"), %in_30: f32 loc("blk.3.partial"), %out: f32 loc("blk.3.partial")):
      %118 = arith.mulf %in, %in_30 : f32 loc("blk.3.partial")
      %119 = arith.addf %out, %118 : f32 loc("blk.3.partial")
      linalg.yield %119 : f32 loc("blk.3.partial")
    } -> tensor<2x8x64xf32> loc("blk.3.partial")
    %60 = flow.tensor.transfer %59 : tensor<2x8x64xf32> to #hal.device.promise<@__device_2> loc("blk.3.y")
    %61 = tensor.empty() : tensor<2x8x64xf32> loc("blk.3.y")
    %62 = linalg.generic {indexing_maps = [#map3, #map3, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%56, %60 : tensor<2x8x64xf32>, tensor<2x8x64xf32>) outs(%61 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32 loc("blk.3.y"), %in_30: f32 loc("blk.3.y"), %out: f32 loc("blk.3.y")):
      %118 = arith.addf %in, %in_30 : f32 loc("blk.3.y")
      linalg.yield %118 : f32 loc("blk.3.y")
    } -> tensor<2x8x64xf32> loc("blk.3.y")
    %63 = flow.tensor.transfer %56 : tensor<2x8x64xf32> to #hal.device.promise<@__device_3> loc("blk.3.y")
    %64 = tensor.empty() : tensor<2x8x64xf32> loc("blk.3.y")
    %65 = linalg.generic {indexing_maps = [#map3, #map3, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%63, %59 : tensor<2x8x64xf32>, tensor<2x8x64xf32>) outs(%64 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32 loc("blk.3.y"), %in_30: f32 loc("blk.3.y"), %out: f32 loc("blk.3.y")):
      %118 = arith.addf %in, %in_30 : f32 loc("blk.3.y")
      linalg.yield %118 : f32 loc("blk.3.y")
    } -> tensor<2x8x64xf32> loc("blk.3.y")
    %66 = flow.tensor.transfer %62 : tensor<2x8x64xf32> to #hal.device.promise<@__device_4> loc("blk.3.y@4,5")
    %67 = flow.tensor.transfer %65 : tensor<2x8x64xf32> to #hal.device.promise<@__device_5> loc("blk.3.y@4,5")
    %extracted_slice_14 = tensor.extract_slice %66[0, 0, 0] [2, 8, 32] [1, 1, 1] : tensor<2x8x64xf32> to tensor<2x8x32xf32> loc("blk.4.partial")
    %cst_15 = arith.constant 0.000000e+00 : f32 loc("blk.4.partial")
    %68 = tensor.empty() : tensor<2x8x64xf32> loc("blk.4.partial")
    %69 = linalg.fill ins(%cst_15 : f32) outs(%68 : tensor<2x8x64xf32>) -> tensor<2x8x64xf32> loc("blk.4.partial")
    %70 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%extracted_slice_14, %8 : tensor<2x8x32xf32>, tensor<64x32xf32>) outs(%69 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32 loc("blk.4.partial"), %in_30: f32 loc("blk.4.partial"), %out: f32 loc("blk.4.partial")):
      %118 = arith.mulf %in, %in_30 : f32 loc("blk.4.partial")
      %119 = arith.addf %out, %118 : f32 loc("blk.4.partial")
      linalg.yield %119 : f32 loc("blk.4.partial")
    } -> tensor<2x8x64xf32> loc("blk.4.partial")
    %extracted_slice_16 = tensor.extract_slice %67[0, 0, 32] [2, 8, 32] [1, 1, 1] : tensor<2x8x64xf32> to tensor<2x8x32xf32> loc("blk.4.partial")
    %cst_17 = arith.constant 0.000000e+00 : f32 loc("blk.4.partial")
    %71 = tensor.empty() : tensor<2x8x64xf32> loc("blk.4.partial")
    %72 = linalg.fill ins(%cst_17 : f32) outs(%71 : tensor<2x8x64xf32>) -> tensor<2x8x64xf32> loc("blk.4.partial")
    %73 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%extracted_slice_16, %9 : tensor<2x8x32xf32>, tensor<64x32xf32>) outs(%72 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32 loc("blk.4.partial"), %in_30: f32 loc("blk.4.partial"), %out: f32 loc("blk.4.partial")):
      %118 = arith.mulf %in, %in_30 : f32 loc("blk.4.partial")
      %119 = arith.addf %out, %118 : f32 loc("blk.4.partial")
      linalg.yield %119 : f32 loc("blk.4.partial")
    } -> tensor<2x8x64xf32> loc("blk.4.partial")
    %74 = flow.tensor.transfer %73 : tensor<2x8x64xf32> to #hal.device.promise<@__device_4> loc("blk.4.y")
    %75 = tensor.empty() : tensor<2x8x64xf32> loc("blk.4.y")
    %76 = linalg.generic {indexing_maps = [#map3, #map3, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%70, %74 : tensor<2x8x64xf32>, tensor<2x8x64xf32>) outs(%75 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32 loc("blk.4.y"), %in_30: f32 loc("blk.4.y"), %out: f32 loc("blk.4.y")):
      %118 = arith.addf %in, %in_30 : f32 loc("blk.4.y")
      linalg.yield %118 : f32 loc("blk.4.y")
    } -> tensor<2x8x64xf32> loc("blk.4.y")
    %77 = flow.tensor.transfer %70 : tensor<2x8x64xf32> to #hal.device.promise<@__device_5> loc("blk.4.y")
    %78 = tensor.empty() : tensor<2x8x64xf32> loc("blk.4.y")
    %79 = linalg.generic {indexing_maps = [#map3, #map3, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%77, %73 : tensor<2x8x64xf32>, tensor<2x8x64xf32>) outs(%78 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32 loc("blk.4.y"), %in_30: f32 loc("blk.4.y"), %out: f32 loc("blk.4.y")):
      %118 = arith.addf %in, %in_30 : f32 loc("blk.4.y")
      linalg.yield %118 : f32 loc("blk.4.y")
    } -> tensor<2x8x64xf32> loc("blk.4.y")
    %extracted_slice_18 = tensor.extract_slice %76[0, 0, 0] [2, 8, 32] [1, 1, 1] : tensor<2x8x64xf32> to tensor<2x8x32xf32> loc("blk.5.partial")
    %cst_19 = arith.constant 0.000000e+00 : f32 loc("blk.5.partial")
    %80 = tensor.empty() : tensor<2x8x64xf32> loc("blk.5.partial")
    %81 = linalg.fill ins(%cst_19 : f32) outs(%80 : tensor<2x8x64xf32>) -> tensor<2x8x64xf32> loc("blk.5.partial")
    %82 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%extracted_slice_18, %10 : tensor<2x8x32xf32>, tensor<64x32xf32>) outs(%81 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32 loc("blk.5.partial"), %in_30: f32 loc("blk.5.partial"), %out: f32 loc("blk.5.partial")):
      %118 = arith.mulf %in, %in_30 : f32 loc("blk.5.partial")
      %119 = arith.addf %out, %118 : f32 loc("blk.5.partial")
      linalg.yield %119 : f32 loc("blk.5.partial")
    } -> tensor<2x8x64xf32> loc("blk.5.partial")
    %extracted_slice_20 = tensor.extract_slice %79[0, 0, 32] [2, 8, 32] [1, 1, 1] : tensor<2x8x64xf32> to tensor<2x8x32xf32> loc("blk.5.partial")
    %cst_21 = arith.constant 0.000000e+00 : f32 loc("blk.5.partial")
    %83 = tensor.empty() : tensor<2x8x64xf32> loc("blk.5.partial")
    %84 = linalg.fill ins(%cst_21 : f32) outs(%83 : tensor<2x8x64xf32>) -> tensor<2x8x64xf32> loc("blk.5.partial")
    %85 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%extracted_slice_20, %11 : tensor<2x8x32xf32>, tensor<64x32xf32>) outs(%84 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32 loc("blk.5.partial"), %in_30: f32 loc("blk.5.partial"), %out: f32 loc("blk.5.partial")):
      %118 = arith.mulf %in, %in_30 : f32 loc("blk.5.partial")
      %119 = arith.addf %out, %118 : f32 loc("blk.5.partial")
      linalg.yield %119 : f32 loc("blk.5.partial")
    } -> tensor<2x8x64xf32> loc("blk.5.partial")
    %86 = flow.tensor.transfer %85 : tensor<2x8x64xf32> to #hal.device.promise<@__device_4> loc("blk.5.y")
    %87 = tensor.empty() : tensor<2x8x64xf32> loc("blk.5.y")
    %88 = linalg.generic {indexing_maps = [#map3, #map3, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%82, %86 : tensor<2x8x64xf32>, tensor<2x8x64xf32>) outs(%87 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32 loc("blk.5.y"), %in_30: f32 loc("blk.5.y"), %out: f32 loc("blk.5.y")):
      %118 = arith.addf %in, %in_30 : f32 loc("blk.5.y")
      linalg.yield %118 : f32 loc("blk.5.y")
    } -> tensor<2x8x64xf32> loc("blk.5.y")
    %89 = flow.tensor.transfer %82 : tensor<2x8x64xf32> to #hal.device.promise<@__device_5> loc("blk.5.y")
    %90 = tensor.empty() : tensor<2x8x64xf32> loc("blk.5.y")
    %91 = linalg.generic {indexing_maps = [#map3, #map3, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%89, %85 : tensor<2x8x64xf32>, tensor<2x8x64xf32>) outs(%90 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32 loc("blk.5.y"), %in_30: f32 loc("blk.5.y"), %out: f32 loc("blk.5.y")):
      %118 = arith.addf %in, %in_30 : f32 loc("blk.5.y")
      linalg.yield %118 : f32 loc("blk.5.y")
    } -> tensor<2x8x64xf32> loc("blk.5.y")
    %92 = flow.tensor.transfer %88 : tensor<2x8x64xf32> to #hal.device.promise<@__device_6> loc("blk.5.y@6,7")
    %93 = flow.tensor.transfer %91 : tensor<2x8x64xf32> to #hal.device.promise<@__device_7> loc("blk.5.y@6,7")
    %extracted_slice_22 = tensor.extract_slice %92[0, 0, 0] [2, 8, 32] [1, 1, 1] : tensor<2x8x64xf32> to tensor<2x8x32xf32> loc("blk.6.partial")
    %cst_23 = arith.constant 0.000000e+00 : f32 loc("blk.6.partial")
    %94 = tensor.empty() : tensor<2x8x64xf32> loc("blk.6.partial")
    %95 = linalg.fill ins(%cst_23 : f32) outs(%94 : tensor<2x8x64xf32>) -> tensor<2x8x64xf32> loc("blk.6.partial")
    %96 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%extracted_slice_22, %12 : tensor<2x8x32xf32>, tensor<64x32xf32>) outs(%95 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32 loc("blk.6.partial"), %in_30: f32 loc("blk.6.partial"), %out: f32 loc("blk.6.partial")):
      %118 = arith.mulf %in, %in_30 : f32 loc("blk.6.partial")
      %119 = arith.addf %out, %118 : f32 loc("blk.6.partial")
      linalg.yield %119 : f32 loc("blk.6.partial")
    } -> tensor<2x8x64xf32> loc("blk.6.partial")
    %extracted_slice_24 = tensor.extract_slice %93[0, 0, 32] [2, 8, 32] [1, 1, 1] : tensor<2x8x64xf32> to tensor<2x8x32xf32> loc("blk.6.partial")
    %cst_25 = arith.constant 0.000000e+00 : f32 loc("blk.6.partial")
    %97 = tensor.empty() : tensor<2x8x64xf32> loc("blk.6.partial")
    %98 = linalg.fill ins(%cst_25 : f32) outs(%97 : tensor<2x8x64xf32>) -> tensor<2x8x64xf32> loc("blk.6.partial")
    %99 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%extracted_slice_24, %13 : tensor<2x8x32xf32>, tensor<64x32xf32>) outs(%98 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32 loc("blk.6.partial"), %in_30: f32 loc("blk.6.partial"), %out: f32 loc("blk.6.partial")):
      %118 = arith.mulf %in, %in_30 : f32 loc("blk.6.partial")
      %119 = arith.addf %out, %118 : f32 loc("blk.6.partial")
      linalg.yield %119 : f32 loc("blk.6.partial")
    } -> tensor<2x8x64xf32> loc("blk.6.partial")
    %100 = flow.tensor.transfer %99 : tensor<2x8x64xf32> to #hal.device.promise<@__device_6> loc("blk.6.y")
    %101 = tensor.empty() : tensor<2x8x64xf32> loc("blk.6.y")
    %102 = linalg.generic {indexing_maps = [#map3, #map3, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%96, %100 : tensor<2x8x64xf32>, tensor<2x8x64xf32>) outs(%101 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32 loc("blk.6.y"), %in_30: f32 loc("blk.6.y"), %out: f32 loc("blk.6.y")):
      %118 = arith.addf %in, %in_30 : f32 loc("blk.6.y")
      linalg.yield %118 : f32 loc("blk.6.y")
    } -> tensor<2x8x64xf32> loc("blk.6.y")
    %103 = flow.tensor.transfer %96 : tensor<2x8x64xf32> to #hal.device.promise<@__device_7> loc("blk.6.y")
    %104 = tensor.empty() : tensor<2x8x64xf32> loc("blk.6.y")
    %105 = linalg.generic {indexing_maps = [#map3, #map3, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%103, %99 : tensor<2x8x64xf32>, tensor<2x8x64xf32>) outs(%104 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32 loc("blk.6.y"), %in_30: f32 loc("blk.6.y"), %out: f32 loc("blk.6.y")):
      %118 = arith.addf %in, %in_30 : f32 loc("blk.6.y")
      linalg.yield %118 : f32 loc("blk.6.y")
    } -> tensor<2x8x64xf32> loc("blk.6.y")
    %extracted_slice_26 = tensor.extract_slice %102[0, 0, 0] [2, 8, 32] [1, 1, 1] : tensor<2x8x64xf32> to tensor<2x8x32xf32> loc("blk.7.partial")
    %cst_27 = arith.constant 0.000000e+00 : f32 loc("blk.7.partial")
    %106 = tensor.empty() : tensor<2x8x64xf32> loc("blk.7.partial")
    %107 = linalg.fill ins(%cst_27 : f32) outs(%106 : tensor<2x8x64xf32>) -> tensor<2x8x64xf32> loc("blk.7.partial")
    %108 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%extracted_slice_26, %14 : tensor<2x8x32xf32>, tensor<64x32xf32>) outs(%107 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32 loc("blk.7.partial"), %in_30: f32 loc("blk.7.partial"), %out: f32 loc("blk.7.partial")):
      %118 = arith.mulf %in, %in_30 : f32 loc("blk.7.partial")
      %119 = arith.addf %out, %118 : f32 loc("blk.7.partial")
      linalg.yield %119 : f32 loc("blk.7.partial")
    } -> tensor<2x8x64xf32> loc("blk.7.partial")
    %extracted_slice_28 = tensor.extract_slice %105[0, 0, 32] [2, 8, 32] [1, 1, 1] : tensor<2x8x64xf32> to tensor<2x8x32xf32> loc("blk.7.partial")
    %cst_29 = arith.constant 0.000000e+00 : f32 loc("blk.7.partial")
    %109 = tensor.empty() : tensor<2x8x64xf32> loc("blk.7.partial")
    %110 = linalg.fill ins(%cst_29 : f32) outs(%109 : tensor<2x8x64xf32>) -> tensor<2x8x64xf32> loc("blk.7.partial")
    %111 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%extracted_slice_28, %15 : tensor<2x8x32xf32>, tensor<64x32xf32>) outs(%110 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32 loc("blk.7.partial"), %in_30: f32 loc("blk.7.partial"), %out: f32 loc("blk.7.partial")):
      %118 = arith.mulf %in, %in_30 : f32 loc("blk.7.partial")
      %119 = arith.addf %out, %118 : f32 loc("blk.7.partial")
      linalg.yield %119 : f32 loc("blk.7.partial")
    } -> tensor<2x8x64xf32> loc("blk.7.partial")
    %112 = flow.tensor.transfer %111 : tensor<2x8x64xf32> to #hal.device.promise<@__device_6> loc("blk.7.y")
    %113 = tensor.empty() : tensor<2x8x64xf32> loc("blk.7.y")
    %114 = linalg.generic {indexing_maps = [#map3, #map3, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%108, %112 : tensor<2x8x64xf32>, tensor<2x8x64xf32>) outs(%113 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32 loc("blk.7.y"), %in_30: f32 loc("blk.7.y"), %out: f32 loc("blk.7.y")):
      %118 = arith.addf %in, %in_30 : f32 loc("blk.7.y")
      linalg.yield %118 : f32 loc("blk.7.y")
    } -> tensor<2x8x64xf32> loc("blk.7.y")
    %115 = flow.tensor.transfer %108 : tensor<2x8x64xf32> to #hal.device.promise<@__device_7> loc("blk.7.y")
    %116 = tensor.empty() : tensor<2x8x64xf32> loc("blk.7.y")
    %117 = linalg.generic {indexing_maps = [#map3, #map3, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%115, %111 : tensor<2x8x64xf32>, tensor<2x8x64xf32>) outs(%116 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32 loc("blk.7.y"), %in_30: f32 loc("blk.7.y"), %out: f32 loc("blk.7.y")):
      %118 = arith.addf %in, %in_30 : f32 loc("blk.7.y")
      linalg.yield %118 : f32 loc("blk.7.y")
    } -> tensor<2x8x64xf32> loc("blk.7.y")
    return %114, %117 : tensor<2x8x64xf32>, tensor<2x8x64xf32> loc("ppffn_sharktank")
  } loc("ppffn_sharktank")
} loc("ppffn_sharktank")

