import Testing
@testable import PeerMeshRoom
@testable import peermesh

/// Keys reach libedit as characters: UTF-8 put together byte by byte, broken bytes dropped.
struct KeyboardInputTests {
    @Test func keysAreReadAsUTF8() {
        #expect(KeyboardInput.decode([0x61]) == .character("a"))
        #expect(KeyboardInput.decode([0xE6]) == .incomplete)
        #expect(KeyboardInput.decode([0xE6, 0x9D]) == .incomplete)
        #expect(KeyboardInput.decode([0xE6, 0x9D, 0xB1]) == .character("東"))
        #expect(KeyboardInput.decode([0xFF]) == .invalid)
        #expect(KeyboardInput.decode([0xE6, 0x41]) == .invalid)
    }
}
