#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
#map1 = affine_map<(d0, d1, d2, d3) -> (d2, d3)>
#map2 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
module @ppffn_sharktank {
  func.func @main(%arg0: tensor<64x32xf32> {ppcc.device = 0 : i64, ppcc.layout = "split(dim=1, 2)", ppcc.name = "blk.0.ffn.weight", ppcc.pinned, ppcc.shard = 0 : i64} loc("blk.0.ffn.weight"), %arg1: tensor<64x32xf32> {ppcc.device = 1 : i64, ppcc.layout = "split(dim=1, 2)", ppcc.name = "blk.0.ffn.weight", ppcc.pinned, ppcc.shard = 1 : i64} loc("blk.0.ffn.weight"), %arg2: tensor<64x32xf32> {ppcc.device = 0 : i64, ppcc.layout = "split(dim=1, 2)", ppcc.name = "blk.1.ffn.weight", ppcc.pinned, ppcc.shard = 0 : i64} loc("blk.1.ffn.weight"), %arg3: tensor<64x32xf32> {ppcc.device = 1 : i64, ppcc.layout = "split(dim=1, 2)", ppcc.name = "blk.1.ffn.weight", ppcc.pinned, ppcc.shard = 1 : i64} loc("blk.1.ffn.weight"), %arg4: tensor<64x32xf32> {ppcc.device = 2 : i64, ppcc.layout = "split(dim=1, 2)", ppcc.name = "blk.2.ffn.weight", ppcc.pinned, ppcc.shard = 0 : i64} loc("blk.2.ffn.weight"), %arg5: tensor<64x32xf32> {ppcc.device = 3 : i64, ppcc.layout = "split(dim=1, 2)", ppcc.name = "blk.2.ffn.weight", ppcc.pinned, ppcc.shard = 1 : i64} loc("blk.2.ffn.weight"), %arg6: tensor<64x32xf32> {ppcc.device = 2 : i64, ppcc.layout = "split(dim=1, 2)", ppcc.name = "blk.3.ffn.weight", ppcc.pinned, ppcc.shard = 0 : i64} loc("blk.3.ffn.weight"), %arg7: tensor<64x32xf32> {ppcc.device = 3 : i64, ppcc.layout = "split(dim=1, 2)", ppcc.name = "blk.3.ffn.weight", ppcc.pinned, ppcc.shard = 1 : i64} loc("blk.3.ffn.weight"), %arg8: tensor<64x32xf32> {ppcc.device = 4 : i64, ppcc.layout = "split(dim=1, 2)", ppcc.name = "blk.4.ffn.weight", ppcc.pinned, ppcc.shard = 0 : i64} loc("blk.4.ffn.weight"), %arg9: tensor<64x32xf32> {ppcc.device = 5 : i64, ppcc.layout = "split(dim=1, 2)", ppcc.name = "blk.4.ffn.weight", ppcc.pinned, ppcc.shard = 1 : i64} loc("blk.4.ffn.weight"), %arg10: tensor<64x32xf32> {ppcc.device = 4 : i64, ppcc.layout = "split(dim=1, 2)", ppcc.name = "blk.5.ffn.weight", ppcc.pinned, ppcc.shard = 0 : i64} loc("blk.5.ffn.weight"), %arg11: tensor<64x32xf32> {ppcc.device = 5 : i64, ppcc.layout = "split(dim=1, 2)", ppcc.name = "blk.5.ffn.weight", ppcc.pinned, ppcc.shard = 1 : i64} loc("blk.5.ffn.weight"), %arg12: tensor<64x32xf32> {ppcc.device = 6 : i64, ppcc.layout = "split(dim=1, 2)", ppcc.name = "blk.6.ffn.weight", ppcc.pinned, ppcc.shard = 0 : i64} loc("blk.6.ffn.weight"), %arg13: tensor<64x32xf32> {ppcc.device = 7 : i64, ppcc.layout = "split(dim=1, 2)", ppcc.name = "blk.6.ffn.weight", ppcc.pinned, ppcc.shard = 1 : i64} loc("blk.6.ffn.weight"), %arg14: tensor<64x32xf32> {ppcc.device = 6 : i64, ppcc.layout = "split(dim=1, 2)", ppcc.name = "blk.7.ffn.weight", ppcc.pinned, ppcc.shard = 0 : i64} loc("blk.7.ffn.weight"), %arg15: tensor<64x32xf32> {ppcc.device = 7 : i64, ppcc.layout = "split(dim=1, 2)", ppcc.name = "blk.7.ffn.weight", ppcc.pinned, ppcc.shard = 1 : i64} loc("blk.7.ffn.weight"), %arg16: tensor<2x8x64xf32> {ppcc.device = 0 : i64, ppcc.layout = "replicated(2)", ppcc.name = "x", ppcc.shard = 0 : i64} loc("x"), %arg17: tensor<2x8x64xf32> {ppcc.device = 1 : i64, ppcc.layout = "replicated(2)", ppcc.name = "x", ppcc.shard = 1 : i64} loc("x")) -> (tensor<2x8x64xf32> {ppcc.device = 6 : i64, ppcc.layout = "replicated(2)", ppcc.name = "blk.7.y", ppcc.shard = 0 : i64}, tensor<2x8x64xf32> {ppcc.device = 7 : i64, ppcc.layout = "replicated(2)", ppcc.name = "blk.7.y", ppcc.shard = 1 : i64}) {
    %extracted_slice = tensor.extract_slice %arg16[0, 0, 0] [2, 8, 32] [1, 1, 1] {ppcc.device = 0 : i64} : tensor<2x8x64xf32> to tensor<2x8x32xf32> loc("blk.0.partial")
    %cst = arith.constant {ppcc.device = 0 : i64} 0.000000e+00 : f32 loc("blk.0.partial")
    %0 = tensor.empty() {ppcc.device = 0 : i64} : tensor<2x8x64xf32> loc("blk.0.partial")
    %1 = linalg.fill {ppcc.device = 0 : i64} ins(%cst : f32) outs(%0 : tensor<2x8x64xf32>) -> tensor<2x8x64xf32> loc("blk.0.partial")
    %2 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%extracted_slice, %arg0 : tensor<2x8x32xf32>, tensor<64x32xf32>) outs(%1 : tensor<2x8x64xf32>) attrs =  {ppcc.device = 0 : i64} {
    ^bb0(%in: f32 loc("blk.0.partial"), %in_30: f32 loc("blk.0.partial"), %out: f32 loc("blk.0.partial")):
      %62 = arith.mulf %in, %in_30 : f32 loc("blk.0.partial")
      %63 = arith.addf %out, %62 : f32 loc("blk.0.partial")
      linalg.yield %63 : f32 loc("blk.0.partial")
    } -> tensor<2x8x64xf32> loc("blk.0.partial")
    %extracted_slice_0 = tensor.extract_slice %arg17[0, 0, 32] [2, 8, 32] [1, 1, 1] {ppcc.device = 1 : i64} : tensor<2x8x64xf32> to tensor<2x8x32xf32> loc("blk.0.partial")
    %cst_1 = arith.constant {ppcc.device = 1 : i64} 0.000000e+00 : f32 loc("blk.0.partial")
    %3 = tensor.empty() {ppcc.device = 1 : i64} : tensor<2x8x64xf32> loc("blk.0.partial")
    %4 = linalg.fill {ppcc.device = 1 : i64} ins(%cst_1 : f32) outs(%3 : tensor<2x8x64xf32>) -> tensor<2x8x64xf32> loc("blk.0.partial")
    %5 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%extracted_slice_0, %arg1 : tensor<2x8x32xf32>, tensor<64x32xf32>) outs(%4 : tensor<2x8x64xf32>) attrs =  {ppcc.device = 1 : i64} {
    ^bb0(%in: f32 loc("blk.0.partial"), %in_30: f32 loc("blk.0.partial"), %out: f32 loc("blk.0.partial")):
      %62 = arith.mulf %in, %in_30 : f32 loc("blk.0.partial")
      %63 = arith.addf %out, %62 : f32 loc("blk.0.partial")
      linalg.yield %63 : f32 loc("blk.0.partial")
    } -> tensor<2x8x64xf32> loc("blk.0.partial")
    %6:2 = "ppcc.all_reduce"(%2, %5) {devices = array<i64: 0, 1>} : (tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> (tensor<2x8x64xf32>, tensor<2x8x64xf32>) loc("blk.0.y")
    %extracted_slice_2 = tensor.extract_slice %6#0[0, 0, 0] [2, 8, 32] [1, 1, 1] {ppcc.device = 0 : i64} : tensor<2x8x64xf32> to tensor<2x8x32xf32> loc("blk.1.partial")
    %cst_3 = arith.constant {ppcc.device = 0 : i64} 0.000000e+00 : f32 loc("blk.1.partial")
    %7 = tensor.empty() {ppcc.device = 0 : i64} : tensor<2x8x64xf32> loc("blk.1.partial")
    %8 = linalg.fill {ppcc.device = 0 : i64} ins(%cst_3 : f32) outs(%7 : tensor<2x8x64xf32>) -> tensor<2x8x64xf32> loc("blk.1.partial")
    %9 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%extracted_slice_2, %arg2 : tensor<2x8x32xf32>, tensor<64x32xf32>) outs(%8 : tensor<2x8x64xf32>) attrs =  {ppcc.device = 0 : i64} {
    ^bb0(%in: f32 loc("blk.1.partial"), %in_30: f32 loc("blk.1.partial"), %out: f32 loc("blk.1.partial")):
      %62 = arith.mulf %in, %in_30 : f32 loc("blk.1.partial")
      %63 = arith.addf %out, %62 : f32 loc("blk.1.partial")
      linalg.yield %63 : f32 loc("blk.1.partial")
    } -> tensor<2x8x64xf32> loc("blk.1.partial")
    %extracted_slice_4 = tensor.extract_slice %6#1[0, 0, 32] [2, 8, 32] [1, 1, 1] {ppcc.device = 1 : i64} : tensor<2x8x64xf32> to tensor<2x8x32xf32> loc("blk.1.partial")
    %cst_5 = arith.constant {ppcc.device = 1 : i64} 0.000000e+00 : f32 loc("blk.1.partial")
    %10 = tensor.empty() {ppcc.device = 1 : i64} : tensor<2x8x64xf32> loc("blk.1.partial")
    %11 = linalg.fill {ppcc.device = 1 : i64} ins(%cst_5 : f32) outs(%10 : tensor<2x8x64xf32>) -> tensor<2x8x64xf32> loc("blk.1.partial")
    %12 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%extracted_slice_4, %arg3 : tensor<2x8x32xf32>, tensor<64x32xf32>) outs(%11 : tensor<2x8x64xf32>) attrs =  {ppcc.device = 1 : i64} {
    ^bb0(%in: f32 loc("blk.1.partial"), %in_30: f32 loc("blk.1.partial"), %out: f32 loc("blk.1.partial")):
      %62 = arith.mulf %in, %in_30 : f32 loc("blk.1.partial")
      %63 = arith.addf %out, %62 : f32 loc("blk.1.partial")
      linalg.yield %63 : f32 loc("blk.1.partial")
    } -> tensor<2x8x64xf32> loc("blk.1.partial")
    %13:2 = "ppcc.all_reduce"(%9, %12) {devices = array<i64: 0, 1>} : (tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> (tensor<2x8x64xf32>, tensor<2x8x64xf32>) loc("blk.1.y")
    %14 = "ppcc.transfer"(%13#0) {source = 0 : i64, target = 2 : i64} : (tensor<2x8x64xf32>) -> tensor<2x8x64xf32> loc("blk.1.y@2,3")
    %15 = "ppcc.transfer"(%13#1) {source = 1 : i64, target = 3 : i64} : (tensor<2x8x64xf32>) -> tensor<2x8x64xf32> loc("blk.1.y@2,3")
    %extracted_slice_6 = tensor.extract_slice %14[0, 0, 0] [2, 8, 32] [1, 1, 1] {ppcc.device = 2 : i64} : tensor<2x8x64xf32> to tensor<2x8x32xf32> loc("blk.2.partial")
    %cst_7 = arith.constant {ppcc.device = 2 : i64} 0.000000e+00 : f32 loc("blk.2.partial")
    %16 = tensor.empty() {ppcc.device = 2 : i64} : tensor<2x8x64xf32> loc("blk.2.partial")
    %17 = linalg.fill {ppcc.device = 2 : i64} ins(%cst_7 : f32) outs(%16 : tensor<2x8x64xf32>) -> tensor<2x8x64xf32> loc("blk.2.partial")
    %18 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%extracted_slice_6, %arg4 : tensor<2x8x32xf32>, tensor<64x32xf32>) outs(%17 : tensor<2x8x64xf32>) attrs =  {ppcc.device = 2 : i64} {
    ^bb0(%in: f32 loc("blk.2.partial"), %in_30: f32 loc("blk.2.partial"), %out: f32 loc("blk.2.partial")):
      %62 = arith.mulf %in, %in_30 : f32 loc("blk.2.partial")
      %63 = arith.addf %out, %62 : f32 loc("blk.2.partial")
      linalg.yield %63 : f32 loc("blk.2.partial")
    } -> tensor<2x8x64xf32> loc("blk.2.partial")
    %extracted_slice_8 = tensor.extract_slice %15[0, 0, 32] [2, 8, 32] [1, 1, 1] {ppcc.device = 3 : i64} : tensor<2x8x64xf32> to tensor<2x8x32xf32> loc("blk.2.partial")
    %cst_9 = arith.constant {ppcc.device = 3 : i64} 0.000000e+00 : f32 loc("blk.2.partial")
    %19 = tensor.empty() {ppcc.device = 3 : i64} : tensor<2x8x64xf32> loc("blk.2.partial")
    %20 = linalg.fill {ppcc.device = 3 : i64} ins(%cst_9 : f32) outs(%19 : tensor<2x8x64xf32>) -> tensor<2x8x64xf32> loc("blk.2.partial")
    %21 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%extracted_slice_8, %arg5 : tensor<2x8x32xf32>, tensor<64x32xf32>) outs(%20 : tensor<2x8x64xf32>) attrs =  {ppcc.device = 3 : i64} {
    ^bb0(%in: f32 loc("blk.2.partial"), %in_30: f32 loc("blk.2.partial"), %out: f32 loc("blk.2.partial")):
      %62 = arith.mulf %in, %in_30 : f32 loc("blk.2.partial")
      %63 = arith.addf %out, %62 : f32 loc("blk.2.partial")
      linalg.yield %63 : f32 loc("blk.2.partial")
    } -> tensor<2x8x64xf32> loc("blk.2.partial")
    %22:2 = "ppcc.all_reduce"(%18, %21) {devices = array<i64: 2, 3>} : (tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> (tensor<2x8x64xf32>, tensor<2x8x64xf32>) loc("blk.2.y")
    %extracted_slice_10 = tensor.extract_slice %22#0[0, 0, 0] [2, 8, 32] [1, 1, 1] {ppcc.device = 2 : i64} : tensor<2x8x64xf32> to tensor<2x8x32xf32> loc("blk.3.partial")
    %cst_11 = arith.constant {ppcc.device = 2 : i64} 0.000000e+00 : f32 loc("blk.3.partial")
    %23 = tensor.empty() {ppcc.device = 2 : i64} : tensor<2x8x64xf32> loc("blk.3.partial")
    %24 = linalg.fill {ppcc.device = 2 : i64} ins(%cst_11 : f32) outs(%23 : tensor<2x8x64xf32>) -> tensor<2x8x64xf32> loc("blk.3.partial")
    %25 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%extracted_slice_10, %arg6 : tensor<2x8x32xf32>, tensor<64x32xf32>) outs(%24 : tensor<2x8x64xf32>) attrs =  {ppcc.device = 2 : i64} {
    ^bb0(%in: f32 loc("blk.3.partial"), %in_30: f32 loc("blk.3.partial"), %out: f32 loc("blk.3.partial")):
      %62 = arith.mulf %in, %in_30 : f32 loc("blk.3.partial")
      %63 = arith.addf %out, %62 : f32 loc("blk.3.partial")
      linalg.yield %63 : f32 loc("blk.3.partial")
    } -> tensor<2x8x64xf32> loc("blk.3.partial")
    %extracted_slice_12 = tensor.extract_slice %22#1[0, 0, 32] [2, 8, 32] [1, 1, 1] {ppcc.device = 3 : i64} : tensor<2x8x64xf32> to tensor<2x8x32xf32> loc("blk.3.partial")
    %cst_13 = arith.constant {ppcc.device = 3 : i64} 0.000000e+00 : f32 loc("blk.3.partial")
    %26 = tensor.empty() {ppcc.device = 3 : i64} : tensor<2x8x64xf32> loc("blk.3.partial")
    %27 = linalg.fill {ppcc.device = 3 : i64} ins(%cst_13 : f32) outs(%26 : tensor<2x8x64xf32>) -> tensor<2x8x64xf32> loc("blk.3.partial")
    %28 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%extracted_slice_12, %arg7 : tensor<2x8x32xf32>, tensor<64x32xf32>) outs(%27 : tensor<2x8x64xf32>) attrs =  {ppcc.device = 3 : i64} {
    ^bb0(%in: f32 loc("blk.3.partial"), %in_30: f32 loc("blk.3.partial"), %out: f32 loc("blk.3.partial")):
      %62 = arith.mulf %in, %in_30 : f32 loc("blk.3.partial")
      %63 = arith.addf %out, %62 : f32 loc("blk.3.partial")
      linalg.yield %63 : f32 loc("blk.3.partial")
    } -> tensor<2x8x64xf32> loc("blk.3.partial")
    %29:2 = "ppcc.all_reduce"(%25, %28) {devices = array<i64: 2, 3>} : (tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> (tensor<2x8x64xf32>, tensor<2x8x64xf32>) loc("blk.3.y")
    %30 = "ppcc.transfer"(%29#0) {source = 2 : i64, target = 4 : i64} : (tensor<2x8x64xf32>) -> tensor<2x8x64xf32> loc("blk.3.y@4,5")
    %31 = "ppcc.transfer"(%29#1) {source = 3 : i64, target = 5 : i64} : (tensor<2x8x64xf32>) -> tensor<2x8x64xf32> loc("blk.3.y@4,5")
    %extracted_slice_14 = tensor.extract_slice %30[0, 0, 0] [2, 8, 32] [1, 1, 1] {ppcc.device = 4 : i64} : tensor<2x8x64xf32> to tensor<2x8x32xf32> loc("blk.4.partial")
    %cst_15 = arith.constant {ppcc.device = 4 : i64} 0.000000e+00 : f32 loc("blk.4.partial")
    %32 = tensor.empty() {ppcc.device = 4 : i64} : tensor<2x8x64xf32> loc("blk.4.partial")
    %33 = linalg.fill {ppcc.device = 4 : i64} ins(%cst_15 : f32) outs(%32 : tensor<2x8x64xf32>) -> tensor<2x8x64xf32> loc("blk.4.partial")
    %34 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%extracted_slice_14, %arg8 : tensor<2x8x32xf32>, tensor<64x32xf32>) outs(%33 : tensor<2x8x64xf32>) attrs =  {ppcc.device = 4 : i64} {
    ^bb0(%in: f32 loc("blk.4.partial"), %in_30: f32 loc("blk.4.partial"), %out: f32 loc("blk.4.partial")):
      %62 = arith.mulf %in, %in_30 : f32 loc("blk.4.partial")
      %63 = arith.addf %out, %62 : f32 loc("blk.4.partial")
      linalg.yield %63 : f32 loc("blk.4.partial")
    } -> tensor<2x8x64xf32> loc("blk.4.partial")
    %extracted_slice_16 = tensor.extract_slice %31[0, 0, 32] [2, 8, 32] [1, 1, 1] {ppcc.device = 5 : i64} : tensor<2x8x64xf32> to tensor<2x8x32xf32> loc("blk.4.partial")
    %cst_17 = arith.constant {ppcc.device = 5 : i64} 0.000000e+00 : f32 loc("blk.4.partial")
    %35 = tensor.empty() {ppcc.device = 5 : i64} : tensor<2x8x64xf32> loc("blk.4.partial")
    %36 = linalg.fill {ppcc.device = 5 : i64} ins(%cst_17 : f32) outs(%35 : tensor<2x8x64xf32>) -> tensor<2x8x64xf32> loc("blk.4.partial")
    %37 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%extracted_slice_16, %arg9 : tensor<2x8x32xf32>, tensor<64x32xf32>) outs(%36 : tensor<2x8x64xf32>) attrs =  {ppcc.device = 5 : i64} {
    ^bb0(%in: f32 loc("blk.4.partial"), %in_30: f32 loc("blk.4.partial"), %out: f32 loc("blk.4.partial")):
      %62 = arith.mulf %in, %in_30 : f32 loc("blk.4.partial")
      %63 = arith.addf %out, %62 : f32 loc("blk.4.partial")
      linalg.yield %63 : f32 loc("blk.4.partial")
    } -> tensor<2x8x64xf32> loc("blk.4.partial")
    %38:2 = "ppcc.all_reduce"(%34, %37) {devices = array<i64: 4, 5>} : (tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> (tensor<2x8x64xf32>, tensor<2x8x64xf32>) loc("blk.4.y")
    %extracted_slice_18 = tensor.extract_slice %38#0[0, 0, 0] [2, 8, 32] [1, 1, 1] {ppcc.device = 4 : i64} : tensor<2x8x64xf32> to tensor<2x8x32xf32> loc("blk.5.partial")
    %cst_19 = arith.constant {ppcc.device = 4 : i64} 0.000000e+00 : f32 loc("blk.5.partial")
    %39 = tensor.empty() {ppcc.device = 4 : i64} : tensor<2x8x64xf32> loc("blk.5.partial")
    %40 = linalg.fill {ppcc.device = 4 : i64} ins(%cst_19 : f32) outs(%39 : tensor<2x8x64xf32>) -> tensor<2x8x64xf32> loc("blk.5.partial")
    %41 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%extracted_slice_18, %arg10 : tensor<2x8x32xf32>, tensor<64x32xf32>) outs(%40 : tensor<2x8x64xf32>) attrs =  {ppcc.device = 4 : i64} {
    ^bb0(%in: f32 loc("blk.5.partial"), %in_30: f32 loc("blk.5.partial"), %out: f32 loc("blk.5.partial")):
      %62 = arith.mulf %in, %in_30 : f32 loc("blk.5.partial")
      %63 = arith.addf %out, %62 : f32 loc("blk.5.partial")
      linalg.yield %63 : f32 loc("blk.5.partial")
    } -> tensor<2x8x64xf32> loc("blk.5.partial")
    %extracted_slice_20 = tensor.extract_slice %38#1[0, 0, 32] [2, 8, 32] [1, 1, 1] {ppcc.device = 5 : i64} : tensor<2x8x64xf32> to tensor<2x8x32xf32> loc("blk.5.partial")
    %cst_21 = arith.constant {ppcc.device = 5 : i64} 0.000000e+00 : f32 loc("blk.5.partial")
    %42 = tensor.empty() {ppcc.device = 5 : i64} : tensor<2x8x64xf32> loc("blk.5.partial")
    %43 = linalg.fill {ppcc.device = 5 : i64} ins(%cst_21 : f32) outs(%42 : tensor<2x8x64xf32>) -> tensor<2x8x64xf32> loc("blk.5.partial")
    %44 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%extracted_slice_20, %arg11 : tensor<2x8x32xf32>, tensor<64x32xf32>) outs(%43 : tensor<2x8x64xf32>) attrs =  {ppcc.device = 5 : i64} {
    ^bb0(%in: f32 loc("blk.5.partial"), %in_30: f32 loc("blk.5.partial"), %out: f32 loc("blk.5.partial")):
      %62 = arith.mulf %in, %in_30 : f32 loc("blk.5.partial")
      %63 = arith.addf %out, %62 : f32 loc("blk.5.partial")
      linalg.yield %63 : f32 loc("blk.5.partial")
    } -> tensor<2x8x64xf32> loc("blk.5.partial")
    %45:2 = "ppcc.all_reduce"(%41, %44) {devices = array<i64: 4, 5>} : (tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> (tensor<2x8x64xf32>, tensor<2x8x64xf32>) loc("blk.5.y")
    %46 = "ppcc.transfer"(%45#0) {source = 4 : i64, target = 6 : i64} : (tensor<2x8x64xf32>) -> tensor<2x8x64xf32> loc("blk.5.y@6,7")
    %47 = "ppcc.transfer"(%45#1) {source = 5 : i64, target = 7 : i64} : (tensor<2x8x64xf32>) -> tensor<2x8x64xf32> loc("blk.5.y@6,7")
    %extracted_slice_22 = tensor.extract_slice %46[0, 0, 0] [2, 8, 32] [1, 1, 1] {ppcc.device = 6 : i64} : tensor<2x8x64xf32> to tensor<2x8x32xf32> loc("blk.6.partial")
    %cst_23 = arith.constant {ppcc.device = 6 : i64} 0.000000e+00 : f32 loc("blk.6.partial")
    %48 = tensor.empty() {ppcc.device = 6 : i64} : tensor<2x8x64xf32> loc("blk.6.partial")
    %49 = linalg.fill {ppcc.device = 6 : i64} ins(%cst_23 : f32) outs(%48 : tensor<2x8x64xf32>) -> tensor<2x8x64xf32> loc("blk.6.partial")
    %50 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%extracted_slice_22, %arg12 : tensor<2x8x32xf32>, tensor<64x32xf32>) outs(%49 : tensor<2x8x64xf32>) attrs =  {ppcc.device = 6 : i64} {
    ^bb0(%in: f32 loc("blk.6.partial"), %in_30: f32 loc("blk.6.partial"), %out: f32 loc("blk.6.partial")):
      %62 = arith.mulf %in, %in_30 : f32 loc("blk.6.partial")
      %63 = arith.addf %out, %62 : f32 loc("blk.6.partial")
      linalg.yield %63 : f32 loc("blk.6.partial")
    } -> tensor<2x8x64xf32> loc("blk.6.partial")
    %extracted_slice_24 = tensor.extract_slice %47[0, 0, 32] [2, 8, 32] [1, 1, 1] {ppcc.device = 7 : i64} : tensor<2x8x64xf32> to tensor<2x8x32xf32> loc("blk.6.partial")
    %cst_25 = arith.constant {ppcc.device = 7 : i64} 0.000000e+00 : f32 loc("blk.6.partial")
    %51 = tensor.empty() {ppcc.device = 7 : i64} : tensor<2x8x64xf32> loc("blk.6.partial")
    %52 = linalg.fill {ppcc.device = 7 : i64} ins(%cst_25 : f32) outs(%51 : tensor<2x8x64xf32>) -> tensor<2x8x64xf32> loc("blk.6.partial")
    %53 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%extracted_slice_24, %arg13 : tensor<2x8x32xf32>, tensor<64x32xf32>) outs(%52 : tensor<2x8x64xf32>) attrs =  {ppcc.device = 7 : i64} {
    ^bb0(%in: f32 loc("blk.6.partial"), %in_30: f32 loc("blk.6.partial"), %out: f32 loc("blk.6.partial")):
      %62 = arith.mulf %in, %in_30 : f32 loc("blk.6.partial")
      %63 = arith.addf %out, %62 : f32 loc("blk.6.partial")
      linalg.yield %63 : f32 loc("blk.6.partial")
    } -> tensor<2x8x64xf32> loc("blk.6.partial")
    %54:2 = "ppcc.all_reduce"(%50, %53) {devices = array<i64: 6, 7>} : (tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> (tensor<2x8x64xf32>, tensor<2x8x64xf32>) loc("blk.6.y")
    %extracted_slice_26 = tensor.extract_slice %54#0[0, 0, 0] [2, 8, 32] [1, 1, 1] {ppcc.device = 6 : i64} : tensor<2x8x64xf32> to tensor<2x8x32xf32> loc("blk.7.partial")
    %cst_27 = arith.constant {ppcc.device = 6 : i64} 0.000000e+00 : f32 loc("blk.7.partial")
    %55 = tensor.empty() {ppcc.device = 6 : i64} : tensor<2x8x64xf32> loc("blk.7.partial")
    %56 = linalg.fill {ppcc.device = 6 : i64} ins(%cst_27 : f32) outs(%55 : tensor<2x8x64xf32>) -> tensor<2x8x64xf32> loc("blk.7.partial")
    %57 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%extracted_slice_26, %arg14 : tensor<2x8x32xf32>, tensor<64x32xf32>) outs(%56 : tensor<2x8x64xf32>) attrs =  {ppcc.device = 6 : i64} {
    ^bb0(%in: f32 loc("blk.7.partial"), %in_30: f32 loc("blk.7.partial"), %out: f32 loc("blk.7.partial")):
      %62 = arith.mulf %in, %in_30 : f32 loc("blk.7.partial")
      %63 = arith.addf %out, %62 : f32 loc("blk.7.partial")
      linalg.yield %63 : f32 loc("blk.7.partial")
    } -> tensor<2x8x64xf32> loc("blk.7.partial")
    %extracted_slice_28 = tensor.extract_slice %54#1[0, 0, 32] [2, 8, 32] [1, 1, 1] {ppcc.device = 7 : i64} : tensor<2x8x64xf32> to tensor<2x8x32xf32> loc("blk.7.partial")
    %cst_29 = arith.constant {ppcc.device = 7 : i64} 0.000000e+00 : f32 loc("blk.7.partial")
    %58 = tensor.empty() {ppcc.device = 7 : i64} : tensor<2x8x64xf32> loc("blk.7.partial")
    %59 = linalg.fill {ppcc.device = 7 : i64} ins(%cst_29 : f32) outs(%58 : tensor<2x8x64xf32>) -> tensor<2x8x64xf32> loc("blk.7.partial")
    %60 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%extracted_slice_28, %arg15 : tensor<2x8x32xf32>, tensor<64x32xf32>) outs(%59 : tensor<2x8x64xf32>) attrs =  {ppcc.device = 7 : i64} {
    ^bb0(%in: f32 loc("blk.7.partial"), %in_30: f32 loc("blk.7.partial"), %out: f32 loc("blk.7.partial")):
      %62 = arith.mulf %in, %in_30 : f32 loc("blk.7.partial")
      %63 = arith.addf %out, %62 : f32 loc("blk.7.partial")
      linalg.yield %63 : f32 loc("blk.7.partial")
    } -> tensor<2x8x64xf32> loc("blk.7.partial")
    %61:2 = "ppcc.all_reduce"(%57, %60) {devices = array<i64: 6, 7>} : (tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> (tensor<2x8x64xf32>, tensor<2x8x64xf32>) loc("blk.7.y")
    return %61#0, %61#1 : tensor<2x8x64xf32>, tensor<2x8x64xf32> loc("ppffn_sharktank")
  } loc("ppffn_sharktank")
} loc("ppffn_sharktank")

