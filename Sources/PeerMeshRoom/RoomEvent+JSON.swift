import FoundationEssentials

/// The JSON form of `RoomEvent`: one object per event, keys sorted, `event` and `time` beside the payload's fields.
extension RoomEvent {
    /// The event as one JSON object (no newline): its fields, `time`, and `extra` (a face's own fields: the sentence
    /// as `text` or `line`, the `request` it answers, the page's download link).
    public func json(at time: Date, extra: [String: JSONField] = [:]) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        encoder.keyEncodingStrategy = .convertToSnakeCase
        let line = Line(event: self, time: time.formatted(.iso8601), extra: extra)
        return String(decoding: (try? encoder.encode(line)) ?? Data(), as: UTF8.self)
    }

    /// Reads one event object (as `json` writes it, or a control socket line); nil for a line that is not a JSON
    /// object with an `event`, or whose fields do not fit the event it names.
    public static func decoded(_ line: Data) -> RoomEvent? {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        return try? decoder.decode(RoomEvent.self, from: line)
    }

    /// An event with its time and a face's fields, encoded into one object.
    private struct Line: Encodable {
        let event: RoomEvent
        let time: String
        let extra: [String: JSONField]

        func encode(to encoder: any Encoder) throws {
            try event.encode(to: encoder)
            var container = encoder.container(keyedBy: AnyKey.self)
            try container.encode(time, forKey: AnyKey("time"))
            for (key, value) in extra { try container.encode(value, forKey: AnyKey(key)) }
        }
    }
}

/// A JSON key known only when it is read or written (a face's own fields, an unknown event's).
package struct AnyKey: CodingKey {
    package let stringValue: String
    package var intValue: Int? { nil }
    package init(_ key: String) { stringValue = key }
    package init?(stringValue: String) { self.stringValue = stringValue }
    package init?(intValue: Int) { nil }
}
