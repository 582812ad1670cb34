import FoundationEssentials

enum Base64 {
    /// Decodes standard base64 (padding required, no whitespace), as key files hold their secrets; nil when invalid.
    static func decode(_ text: some StringProtocol) -> [UInt8]? {
        Data(base64Encoded: String(text)).map(Array.init)
    }
}
