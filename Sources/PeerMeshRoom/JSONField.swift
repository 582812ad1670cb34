import FoundationEssentials

/// One value of an event's JSON object that no case of `RoomEvent` names (a face's own additions, such as the page's
/// download link, or the fields of an event this version does not know): text, a whole number or a yes/no, so that
/// scripts read counts and sizes as JSON numbers, not as strings.
public enum JSONField: Sendable, Equatable, Codable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral {
    case string(String)
    case number(Int64)
    case bool(Bool)

    /// Text.
    public init(stringLiteral value: String) { self = .string(value) }

    /// A whole number.
    public init(integerLiteral value: Int64) { self = .number(value) }

    /// A count or size.
    public static func int(_ value: Int) -> JSONField { .number(Int64(value)) }

    /// Reads a yes/no, a whole number or text, in that order.
    public init(from decoder: any Decoder) throws {
        let single = try decoder.singleValueContainer()
        if let flag = try? single.decode(Bool.self) {
            self = .bool(flag)
        } else if let number = try? single.decode(Int64.self) {
            self = .number(number)
        } else {
            self = .string(try single.decode(String.self))
        }
    }

    /// Writes the value as JSON has it.
    public func encode(to encoder: any Encoder) throws {
        var single = encoder.singleValueContainer()
        switch self {
        case .string(let text): try single.encode(text)
        case .number(let number): try single.encode(number)
        case .bool(let flag): try single.encode(flag)
        }
    }
}
