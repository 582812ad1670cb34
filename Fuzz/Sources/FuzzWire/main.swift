import PeerMeshFuzzTargets

/// libFuzzer's entry point: everything a remote peer can make us parse (preamble, frames, Hello, connection data).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzWire(_ start: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    FuzzTargets.wireInput(Array(UnsafeBufferPointer(start: start, count: count)))
    return 0
}
