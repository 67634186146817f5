#map = affine_map<(d0, d1, d2) -> (d0, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d1, d2)>
#map2 = affine_map<(d0, d1, d2) -> (d0, d1)>
#map3 = affine_map<(d0, d1) -> (d0, d1)>
#map4 = affine_map<(d0, d1) -> (d1)>
module @inserted_collectives {
  util.global private @"w_cols.shard.0" {stream.affinity = #hal.device.promise<@__device_0>} = #flow.parameter.named<"model"::"w_cols.shard.0"> : tensor<16x16xf32> loc("w_cols")
  util.global private @"w_cols.shard.1" {stream.affinity = #hal.device.promise<@__device_1>} = #flow.parameter.named<"model"::"w_cols.shard.1"> : tensor<16x16xf32> loc("w_cols")
  util.global private @"w_in.shard.0" {stream.affinity = #hal.device.promise<@__device_2>} = #flow.parameter.named<"model"::"w_in.shard.0"> : tensor<24x16xf32> loc("w_in")
  util.global private @"w_in.shard.1" {stream.affinity = #hal.device.promise<@__device_3>} = #flow.parameter.named<"model"::"w_in.shard.1"> : tensor<24x16xf32> loc("w_in")
  util.global private @"b.shard.0" {stream.affinity = #hal.device.promise<@__device_2>} = #flow.parameter.named<"model"::"b.shard.0"> : tensor<24xf32> loc("b")
  util.global private @"b.shard.1" {stream.affinity = #hal.device.promise<@__device_3>} = #flow.parameter.named<"model"::"b.shard.0"> : tensor<24xf32> loc("b")
  func.func @main(%arg0: tensor<4x16xf32> {iree.abi.affinity = #hal.device.promise<@__device_0>} loc("x"), %arg1: tensor<4x16xf32> {iree.abi.affinity = #hal.device.promise<@__device_1>} loc("x"), %arg2: tensor<4x32xf32> {iree.abi.affinity = #hal.device.promise<@__device_0>} loc("u")) -> (tensor<16x24xf32> {iree.abi.affinity = #hal.device.promise<@__device_2>}, tensor<16x24xf32> {iree.abi.affinity = #hal.device.promise<@__device_3>}, tensor<4x24xf32> {iree.abi.affinity = #hal.device.promise<@__device_2>}, tensor<4x24xf32> {iree.abi.affinity = #hal.device.promise<@__device_3>}) {
    %0 = util.global.load @w_cols.shard.0 : tensor<16x16xf32> loc("w_cols")
    %1 = util.global.load @w_cols.shard.1 : tensor<16x16xf32> loc("w_cols")
    %2 = util.global.load @w_in.shard.0 : tensor<24x16xf32> loc("w_in")
    %3 = util.global.load @w_in.shard.1 : tensor<24x16xf32> loc("w_in")
    %4 = util.global.load @b.shard.0 : tensor<24xf32> loc("b")
    %5 = util.global.load @b.shard.1 : tensor<24xf32> loc("b")
    %6 = flow.tensor.transfer %1 : tensor<16x16xf32> to #hal.device.promise<@__device_0> loc("w_cols@gathered")
    %concat = tensor.concat dim(1) %0, %6 : (tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x32xf32> loc("w_cols@gathered")
    %7 = flow.tensor.transfer %0 : tensor<16x16xf32> to #hal.device.promise<@__device_1> loc("w_cols@gathered")
    %concat_0 = tensor.concat dim(1) %7, %1 : (tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x32xf32> loc("w_cols@gathered")
    %cst = arith.constant 0.000000e+00 : f32 loc("y")
    %8 = tensor.empty() : tensor<4x32xf32> loc("y")
    %9 = linalg.fill ins(%cst : f32) outs(%8 : tensor<4x32xf32>) -> tensor<4x32xf32> loc("y")
    %10 = linalg.matmul ins(%arg0, %concat : tensor<4x16xf32>, tensor<16x32xf32>) outs(%9 : tensor<4x32xf32>) -> tensor<4x32xf32> loc("y")
    %cst_1 = arith.constant 0.000000e+00 : f32 loc("y")
    %11 = tensor.empty() : tensor<4x32xf32> loc("y")
    %12 = linalg.fill ins(%cst_1 : f32) outs(%11 : tensor<4x32xf32>) -> tensor<4x32xf32> loc("y")
    %13 = linalg.matmul ins(%arg1, %concat_0 : tensor<4x16xf32>, tensor<16x32xf32>) outs(%12 : tensor<4x32xf32>) -> tensor<4x32xf32> loc("y")
    %14 = flow.tensor.transfer %13 : tensor<4x32xf32> to #hal.device.promise<@__device_0> loc("y@gathered")
    %concat_2 = tensor.concat dim(0) %10, %14 : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<8x32xf32> loc("y@gathered")
    %15 = flow.tensor.transfer %10 : tensor<4x32xf32> to #hal.device.promise<@__device_1> loc("y@gathered")
    %concat_3 = tensor.concat dim(0) %15, %13 : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<8x32xf32> loc("y@gathered")
    %16 = tensor.empty() : tensor<16x32xf32> loc("c@whole")
    %inserted_slice = tensor.insert_slice %concat_2 into %16[0, 0] [8, 32] [1, 1] : tensor<8x32xf32> into tensor<16x32xf32> loc("c@whole")
    %inserted_slice_4 = tensor.insert_slice %concat_2 into %inserted_slice[8, 0] [8, 32] [1, 1] : tensor<8x32xf32> into tensor<16x32xf32> loc("c@whole")
    %17 = tensor.empty() : tensor<16x32xf32> loc("c@whole")
    %inserted_slice_5 = tensor.insert_slice %concat_3 into %17[0, 0] [8, 32] [1, 1] : tensor<8x32xf32> into tensor<16x32xf32> loc("c@whole")
    %inserted_slice_6 = tensor.insert_slice %concat_3 into %inserted_slice_5[8, 0] [8, 32] [1, 1] : tensor<8x32xf32> into tensor<16x32xf32> loc("c@whole")
    %extracted_slice = tensor.extract_slice %inserted_slice_4[0, 0] [8, 32] [1, 1] : tensor<16x32xf32> to tensor<8x32xf32> loc("c")
    %extracted_slice_7 = tensor.extract_slice %inserted_slice_6[8, 0] [8, 32] [1, 1] : tensor<16x32xf32> to tensor<8x32xf32> loc("c")
    %18 = flow.tensor.transfer %extracted_slice_7 : tensor<8x32xf32> to #hal.device.promise<@__device_0> loc("r")
    %concat_8 = tensor.concat dim(0) %extracted_slice, %18 : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<16x32xf32> loc("r")
    %19 = flow.tensor.transfer %extracted_slice : tensor<8x32xf32> to #hal.device.promise<@__device_1> loc("r")
    %concat_9 = tensor.concat dim(0) %19, %extracted_slice_7 : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<16x32xf32> loc("r")
    %20 = flow.tensor.transfer %concat_8 : tensor<16x32xf32> to #hal.device.promise<@__device_2> loc("r@2,3")
    %21 = flow.tensor.transfer %concat_9 : tensor<16x32xf32> to #hal.device.promise<@__device_3> loc("r@2,3")
    %extracted_slice_10 = tensor.extract_slice %20[0, 0] [16, 16] [1, 1] : tensor<16x32xf32> to tensor<16x16xf32> loc("p")
    %cst_11 = arith.constant 0.000000e+00 : f32 loc("p")
    %22 = tensor.empty() : tensor<16x24xf32> loc("p")
    %23 = linalg.fill ins(%cst_11 : f32) outs(%22 : tensor<16x24xf32>) -> tensor<16x24xf32> loc("p")
    %24 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "reduction"]} ins(%extracted_slice_10, %2 : tensor<16x16xf32>, tensor<24x16xf32>) outs(%23 : tensor<16x24xf32>) {
    ^bb0(%in: f32 loc("p"), %in_18: f32 loc("p"), %out: f32 loc("p")):
      %52 = arith.mulf %in, %in_18 : f32 loc("p")
      %53 = arith.addf %out, %52 : f32 loc("p")
      linalg.yield %53 : f32 loc("p")
    } -> tensor<16x24xf32> loc("p")
    %25 = tensor.empty() : tensor<16x24xf32> loc("p")
    %26 = linalg.generic {indexing_maps = [#map3, #map4, #map3], iterator_types = ["parallel", "parallel"]} ins(%24, %4 : tensor<16x24xf32>, tensor<24xf32>) outs(%25 : tensor<16x24xf32>) {
    ^bb0(%in: f32 loc("p"), %in_18: f32 loc("p"), %out: f32 loc("p")):
      %52 = arith.addf %in, %in_18 : f32 loc("p")
      linalg.yield %52 : f32 loc("p")
    } -> tensor<16x24xf32> loc("p")
    %extracted_slice_12 = tensor.extract_slice %21[0, 16] [16, 16] [1, 1] : tensor<16x32xf32> to tensor<16x16xf32> loc("p")
    %cst_13 = arith.constant 0.000000e+00 : f32 loc("p")
    %27 = tensor.empty() : tensor<16x24xf32> loc("p")
    %28 = linalg.fill ins(%cst_13 : f32) outs(%27 : tensor<16x24xf32>) -> tensor<16x24xf32> loc("p")
    %29 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "reduction"]} ins(%extracted_slice_12, %3 : tensor<16x16xf32>, tensor<24x16xf32>) outs(%28 : tensor<16x24xf32>) {
    ^bb0(%in: f32 loc("p"), %in_18: f32 loc("p"), %out: f32 loc("p")):
      %52 = arith.mulf %in, %in_18 : f32 loc("p")
      %53 = arith.addf %out, %52 : f32 loc("p")
      linalg.yield %53 : f32 loc("p")
    } -> tensor<16x24xf32> loc("p")
    %30 = flow.tensor.transfer %29 : tensor<16x24xf32> to #hal.device.promise<@__device_2> loc("s")
    %31 = tensor.empty() : tensor<16x24xf32> loc("s")
    %32 = linalg.generic {indexing_maps = [#map3, #map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%26, %30 : tensor<16x24xf32>, tensor<16x24xf32>) outs(%31 : tensor<16x24xf32>) {
    ^bb0(%in: f32 loc("s"), %in_18: f32 loc("s"), %out: f32 loc("s")):
      %52 = arith.addf %in, %in_18 : f32 loc("s")
      linalg.yield %52 : f32 loc("s")
    } -> tensor<16x24xf32> loc("s")
    %33 = flow.tensor.transfer %26 : tensor<16x24xf32> to #hal.device.promise<@__device_3> loc("s")
    %34 = tensor.empty() : tensor<16x24xf32> loc("s")
    %35 = linalg.generic {indexing_maps = [#map3, #map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%33, %29 : tensor<16x24xf32>, tensor<16x24xf32>) outs(%34 : tensor<16x24xf32>) {
    ^bb0(%in: f32 loc("s"), %in_18: f32 loc("s"), %out: f32 loc("s")):
      %52 = arith.addf %in, %in_18 : f32 loc("s")
      linalg.yield %52 : f32 loc("s")
    } -> tensor<16x24xf32> loc("s")
    %36 = flow.tensor.transfer %arg2 : tensor<4x32xf32> to #hal.device.promise<@__device_2> loc("ut")
    %37 = flow.tensor.transfer %arg2 : tensor<4x32xf32> to #hal.device.promise<@__device_3> loc("ut")
    %extracted_slice_14 = tensor.extract_slice %36[0, 0] [4, 16] [1, 1] : tensor<4x32xf32> to tensor<4x16xf32> loc("q")
    %cst_15 = arith.constant 0.000000e+00 : f32 loc("q")
    %38 = tensor.empty() : tensor<4x24xf32> loc("q")
    %39 = linalg.fill ins(%cst_15 : f32) outs(%38 : tensor<4x24xf32>) -> tensor<4x24xf32> loc("q")
    %40 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "reduction"]} ins(%extracted_slice_14, %2 : tensor<4x16xf32>, tensor<24x16xf32>) outs(%39 : tensor<4x24xf32>) {
    ^bb0(%in: f32 loc("q"), %in_18: f32 loc("q"), %out: f32 loc("q")):
      %52 = arith.mulf %in, %in_18 : f32 loc("q")
      %53 = arith.addf %out, %52 : f32 loc("q")
      linalg.yield %53 : f32 loc("q")
    } -> tensor<4x24xf32> loc("q")
    %41 = tensor.empty() : tensor<4x24xf32> loc("q")
    %42 = linalg.generic {indexing_maps = [#map3, #map4, #map3], iterator_types = ["parallel", "parallel"]} ins(%40, %4 : tensor<4x24xf32>, tensor<24xf32>) outs(%41 : tensor<4x24xf32>) {
    ^bb0(%in: f32 loc("q"), %in_18: f32 loc("q"), %out: f32 loc("q")):
      %52 = arith.addf %in, %in_18 : f32 loc("q")
      linalg.yield %52 : f32 loc("q")
    } -> tensor<4x24xf32> loc("q")
    %extracted_slice_16 = tensor.extract_slice %37[0, 16] [4, 16] [1, 1] : tensor<4x32xf32> to tensor<4x16xf32> loc("q")
    %cst_17 = arith.constant 0.000000e+00 : f32 loc("q")
    %43 = tensor.empty() : tensor<4x24xf32> loc("q")
    %44 = linalg.fill ins(%cst_17 : f32) outs(%43 : tensor<4x24xf32>) -> tensor<4x24xf32> loc("q")
    %45 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "reduction"]} ins(%extracted_slice_16, %3 : tensor<4x16xf32>, tensor<24x16xf32>) outs(%44 : tensor<4x24xf32>) {
    ^bb0(%in: f32 loc("q"), %in_18: f32 loc("q"), %out: f32 loc("q")):
      %52 = arith.mulf %in, %in_18 : f32 loc("q")
      %53 = arith.addf %out, %52 : f32 loc("q")
      linalg.yield %53 : f32 loc("q")
    } -> tensor<4x24xf32> loc("q")
    %46 = flow.tensor.transfer %45 : tensor<4x24xf32> to #hal.device.promise<@__device_2> loc("q2")
    %47 = tensor.empty() : tensor<4x24xf32> loc("q2")
    %48 = linalg.generic {indexing_maps = [#map3, #map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%42, %46 : tensor<4x24xf32>, tensor<4x24xf32>) outs(%47 : tensor<4x24xf32>) {
    ^bb0(%in: f32 loc("q2"), %in_18: f32 loc("q2"), %out: f32 loc("q2")):
      %52 = arith.addf %in, %in_18 : f32 loc("q2")
      linalg.yield %52 : f32 loc("q2")
    } -> tensor<4x24xf32> loc("q2")
    %49 = flow.tensor.transfer %42 : tensor<4x24xf32> to #hal.device.promise<@__device_3> loc("q2")
    %50 = tensor.empty() : tensor<4x24xf32> loc("q2")
    %51 = linalg.generic {indexing_maps = [#map3, #map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%49, %45 : tensor<4x24xf32>, tensor<4x24xf32>) outs(%50 : tensor<4x24xf32>) {
    ^bb0(%in: f32 loc("q2"), %in_18: f32 loc("q2"), %out: f32 loc("q2")):
      %52 = arith.addf %in, %in_18 : f32 loc("q2")
      linalg.yield %52 : f32 loc("q2")
    } -> tensor<4x24xf32> loc("q2")
    return %32, %35, %48, %51 : tensor<16x24xf32>, tensor<16x24xf32>, tensor<4x24xf32>, tensor<4x24xf32> loc("inserted_collectives")
  } loc("inserted_collectives")
} loc("inserted_collectives")

