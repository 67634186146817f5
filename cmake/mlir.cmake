# Placeholder: the MLIR emitter build is set up by the emitter work (issue 3).
