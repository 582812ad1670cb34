import PeerMesh
import Testing
@testable import PeerMeshRoom
@testable import peermesh

/// Joining without discovery (issue #17 item 5): the code in a room selector, and its QR code.
struct JoinCodeTests {
    @Test func aSelectorCarriesAConnectionCodeWithOrWithoutTheRoomName() {
        #expect(RoomSelector("lobby@pm1.AAAA").connectionCode! == ("lobby", "pm1.AAAA"))
        #expect(RoomSelector("pm1.AAAA").connectionCode! == (nil, "pm1.AAAA"))
        #expect(RoomSelector("me@home@pm1.B-_9").connectionCode! == ("me@home", "pm1.B-_9"))
        #expect(RoomSelector("lobby@alice").connectionCode == nil && RoomSelector("lobby").connectionCode == nil)
    }

    /// libqrencode's symbol, read the right way round: the three finder patterns (7×7 rings) sit in the top-left,
    /// top-right and bottom-left corners, and the drawing has the quiet zone all round.
    @Test func qrCodesComeFromLibqrencodeWithTheirFinderPatterns() throws {
        let code = try #require(QRCode("peermesh join lobby@pm1.AQxGhk3Yq5Bz0cW8v2s0lP9JmRk8dD4nLbE6h1TqfCwFYWxpY2UCAQQKAAABGe0"))
        let size = code.modules.count
        #expect(size >= 21 && (size - 17) % 4 == 0)
        func ring(_ top: Int, _ left: Int) -> Bool {
            (0..<7).allSatisfy { r in (0..<7).allSatisfy { c in
                let edge = r == 0 || r == 6 || c == 0 || c == 6, core = (2...4).contains(r) && (2...4).contains(c)
                return code.modules[top + r][left + c] == (edge || core)
            } }
        }
        #expect(ring(0, 0) && ring(0, size - 7) && ring(size - 7, 0))
        #expect(!ring(size - 7, size - 7))
        let lines = code.lines(margin: 2)
        #expect(lines.count == (size + 4 + 1) / 2)
        #expect(lines.allSatisfy { $0.count == size + 4 })
        #expect(lines[0].allSatisfy { $0 == "█" })
    }

    @Test func halfBlocksDrawLightModules() {
        // One dark module in a 1×1 code with a one-module margin: light all round it. Rows 0–1 share the first line
        // (upper half light everywhere, lower half dark in the middle); row 2 is the upper half of the second.
        let lines = QRCode(modules: [[true]]).lines(margin: 1)
        #expect(lines == ["█▀█", "▀▀▀"])
    }
}
