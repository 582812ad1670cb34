/// Numbers as the room prints them (`05`, ` 45`, `12.3`, `30`): what `String(format:)` gave, which is Foundation's
/// and not in FoundationEssentials.
enum NumberText {
    /// `value` right-aligned in `width` columns, filled with `fill` (`padded(5, width: 2, fill: "0")` is `05`).
    static func padded(_ value: Int, width: Int, fill: Character = " ") -> String {
        let digits = String(value)
        return String(repeating: fill, count: max(0, width - digits.count)) + digits
    }

    /// `value` with one decimal, rounded half away from zero (`12.34` is `12.3`).
    static func oneDecimal(_ value: Double) -> String {
        let tenths = Int((value * 10).rounded())
        return (tenths < 0 ? "-" : "") + "\(abs(tenths) / 10).\(abs(tenths) % 10)"
    }

    /// `value` without a trailing `.0` (`30`, `0.5`), as `%g` shows a number of seconds.
    static func short(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int(value)) : String(value)
    }
}
