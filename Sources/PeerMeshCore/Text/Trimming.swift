extension StringProtocol {
    /// Without the spaces, tabs and line ends at either end (what Foundation's `trimmingCharacters(in:)` gave;
    /// FoundationEssentials has no such method).
    package var trimmed: String {
        guard let first = firstIndex(where: { !$0.isWhitespace }), let last = lastIndex(where: { !$0.isWhitespace }) else { return "" }
        return String(self[first...last])
    }
}
