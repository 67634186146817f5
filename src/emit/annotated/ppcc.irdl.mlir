// The ppcc dialect: cross-device ops of ppcc's annotated MLIR (DESIGN §5).
// Defined in IRDL so that both ppcc (mlirLoadIRDLDialects, before it writes
// a module) and mlir-opt verify modules that use it:
//   mlir-opt-19 --irdl-file=ppcc.irdl.mlir model.mlir
//
// Devices are integers (ppcc device ids). Per-shard compute ops are upstream
// ops carrying a discardable `ppcc.device` attribute; function arguments and
// results carry ppcc.device, ppcc.name, ppcc.shard, ppcc.layout and, for
// pinned values, ppcc.pinned.
//
// A constraint variable used twice means "the same type": e.g. a transfer's
// result has its operand's type, and all shards of an all_reduce share one
// type.
irdl.dialect @ppcc {
  // One shard moves from device `source` to device `target`.
  irdl.operation @transfer {
    %tensor = irdl.base "!builtin.tensor"
    %source = irdl.base "#builtin.integer"
    %target = irdl.base "#builtin.integer"
    irdl.operands(%tensor)
    irdl.results(%tensor)
    irdl.attributes {"source" = %source, "target" = %target}
  }

  // Partial sums (one per device) -> the full sum on every device.
  irdl.operation @all_reduce {
    %shard = irdl.base "!builtin.tensor"
    %devices = irdl.base "#builtin.dense_array"
    irdl.operands(variadic %shard)
    irdl.results(variadic %shard)
    irdl.attributes {"devices" = %devices}
  }

  // Slices along `dim` -> the whole tensor on every device.
  irdl.operation @all_gather {
    %slice = irdl.base "!builtin.tensor"
    %whole = irdl.base "!builtin.tensor"
    %devices = irdl.base "#builtin.dense_array"
    %dim = irdl.base "#builtin.integer"
    irdl.operands(variadic %slice)
    irdl.results(variadic %whole)
    irdl.attributes {"devices" = %devices, "dim" = %dim}
  }

  // Partial sums -> slice i of the sum (along `dim`) on device i.
  irdl.operation @reduce_scatter {
    %partial = irdl.base "!builtin.tensor"
    %slice = irdl.base "!builtin.tensor"
    %devices = irdl.base "#builtin.dense_array"
    %dim = irdl.base "#builtin.integer"
    irdl.operands(variadic %partial)
    irdl.results(variadic %slice)
    irdl.attributes {"devices" = %devices, "dim" = %dim}
  }

  // Shards on `source_devices` -> a full copy on each of `target_devices`.
  irdl.operation @replicate {
    %in = irdl.base "!builtin.tensor"
    %copy = irdl.base "!builtin.tensor"
    %source = irdl.base "#builtin.dense_array"
    %target = irdl.base "#builtin.dense_array"
    irdl.operands(variadic %in)
    irdl.results(variadic %copy)
    irdl.attributes {"source_devices" = %source, "target_devices" = %target}
  }

  // Shards on `source_devices` -> slice i along `dim` on target_devices[i].
  irdl.operation @reshard_split {
    %in = irdl.base "!builtin.tensor"
    %slice = irdl.base "!builtin.tensor"
    %source = irdl.base "#builtin.dense_array"
    %target = irdl.base "#builtin.dense_array"
    %dim = irdl.base "#builtin.integer"
    irdl.operands(variadic %in)
    irdl.results(variadic %slice)
    irdl.attributes {"source_devices" = %source, "target_devices" = %target, "dim" = %dim}
  }

  // Shards -> one whole tensor on device `target`. mode: "concat" (split
  // along `dim`), "sum" (partial sums) or "copy" (replicated; dim = -1).
  irdl.operation @unshard {
    %in = irdl.base "!builtin.tensor"
    %whole = irdl.base "!builtin.tensor"
    %source = irdl.base "#builtin.dense_array"
    %target = irdl.base "#builtin.integer"
    %concat = irdl.is "concat"
    %sum = irdl.is "sum"
    %copy = irdl.is "copy"
    %mode = irdl.any_of(%concat, %sum, %copy)
    %dim = irdl.base "#builtin.integer"
    irdl.operands(variadic %in)
    irdl.results(%whole)
    irdl.attributes {"source_devices" = %source, "target" = %target, "mode" = %mode, "dim" = %dim}
  }
}
