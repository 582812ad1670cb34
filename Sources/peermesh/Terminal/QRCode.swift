import PeerMeshRoom
import CQRencode

/// A connection code as a QR code for the terminal, made by libqrencode and drawn with half-block characters (two
/// rows of modules per text line).
struct QRCode: Sendable {
    /// The modules, row by row; true is dark.
    let modules: [[Bool]]

    /// The QR code of `text` (byte mode, low error correction: the code is long and the screen small); nil when
    /// libqrencode cannot encode it.
    init?(_ text: String) {
        guard let code = QRcode_encodeString8bit(text, 0, QR_ECLEVEL_L) else { return nil }
        defer { QRcode_free(code) }
        let width = Int(code.pointee.width)
        let data = UnsafeBufferPointer(start: code.pointee.data, count: width * width)
        // libqrencode: bit 0 of each byte is the module's colour (1 = dark); the other bits describe its role.
        modules = (0..<width).map { row in (0..<width).map { data[row * width + $0] & 1 == 1 } }
    }

    init(modules: [[Bool]]) { self.modules = modules }

    /// The lines to print, with a quiet zone of `margin` modules. Light modules are drawn (a terminal's background is
    /// usually dark), so the code reads dark-on-light as scanners expect; two module rows share one line.
    func lines(margin: Int = 2) -> [String] {
        let width = modules.count + 2 * margin
        func light(_ row: Int, _ column: Int) -> Bool {
            let (r, c) = (row - margin, column - margin)
            guard r >= 0, c >= 0, r < modules.count, c < modules.count else { return true }
            return !modules[r][c]
        }
        return stride(from: 0, to: width, by: 2).map { row in
            String((0..<width).map { column -> Character in
                switch (light(row, column), row + 1 < width && light(row + 1, column)) {
                case (true, true): "█"
                case (true, false): "▀"
                case (false, true): "▄"
                case (false, false): " "
                }
            })
        }
    }
}
