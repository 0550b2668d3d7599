import { describe, expect, it } from "vitest"
import type { ExtractedEvent, Extraction, ExtractionChunk, ExtractionInput } from "../../src/extract/Extraction.ts"
import { extractRules } from "../../src/extract/rules.ts"

const document = (text: string, documentDate: string | null = null): ExtractionInput => ({
  title: "fixture",
  documentDate,
  chunks: [{ ordinal: 0, text, speaker: null, spokenAt: null }]
})

const chat = (...messages: ReadonlyArray<readonly [speaker: string, spokenAt: string, text: string]>): ExtractionInput => ({
  title: "chat",
  documentDate: null,
  chunks: messages.map(([speaker, spokenAt, text], ordinal): ExtractionChunk => ({ ordinal, text, speaker, spokenAt }))
})

const entityNamed = (extraction: Extraction, name: string) => {
  const found = extraction.entities.filter((entity) => entity.name === name)
  expect(found, `one entity named ${name}`).toHaveLength(1)
  return found[0]!
}

const eventOf = (extraction: Extraction, kind: string) => {
  const found = extraction.events.filter((event) => event.kind === kind)
  expect(found, `one ${kind} event`).toHaveLength(1)
  return found[0]!
}

/** The event's participants as entity names and roles. */
const rolesOf = (extraction: Extraction, event: ExtractedEvent) =>
  event.participants.map((participant) => ({
    name: extraction.entities.find((entity) => entity.key === participant.entity)!.name,
    role: participant.role
  }))

describe("extractRules: entities and events", () => {
  it("reads who did what to whom, where and when", () => {
    const extraction = extractRules(document("On March 3, 2021, Acme Corp acquired Globex in Berlin."))
    expect(entityNamed(extraction, "Acme Corp").kind).toBe("organization")
    expect(entityNamed(extraction, "Globex").kind).toBe("organization")
    expect(entityNamed(extraction, "Berlin").kind).toBe("place")
    const acquire = eventOf(extraction, "acquire")
    expect(rolesOf(extraction, acquire)).toEqual([
      { name: "Acme Corp", role: "actor" },
      { name: "Globex", role: "object" },
      { name: "Berlin", role: "place" }
    ])
    expect(acquire.place).toBe(entityNamed(extraction, "Berlin").key)
    expect(acquire.time).toEqual({
      start: "2021-03-03T00:00:00.000Z",
      end: "2021-03-04T00:00:00.000Z",
      precision: "day",
      text: "March 3, 2021",
      relative: false
    })
    expect(acquire.statement).toBe("On March 3, 2021, Acme Corp acquired Globex in Berlin.")
    expect(acquire.chunkOrdinals).toEqual([0])
    expect(acquire.confidence).toBeGreaterThan(0.8)
    expect(acquire.confidence).toBeLessThanOrEqual(1)
  })

  it("makes the agent of a passive the actor and its subject the object", () => {
    const extraction = extractRules(document("Globex was acquired by Acme Corp in 2021."))
    const acquire = eventOf(extraction, "acquire")
    expect(rolesOf(extraction, acquire)).toEqual([
      { name: "Acme Corp", role: "actor" },
      { name: "Globex", role: "object" }
    ])
    expect(acquire.time).toMatchObject({ start: "2021-01-01T00:00:00.000Z", end: "2022-01-01T00:00:00.000Z", precision: "year" })
  })

  it("gives a reported clause an event of its own", () => {
    const extraction = extractRules(document("Maria Lopez said that Nike would open a store in Lisbon."))
    expect(extraction.events.map((event) => event.kind)).toEqual(["say", "open"])
    expect(rolesOf(extraction, eventOf(extraction, "say"))).toEqual([{ name: "Maria Lopez", role: "actor" }])
    const open = eventOf(extraction, "open")
    expect(rolesOf(extraction, open)).toEqual([{ name: "Nike", role: "actor" }, { name: "Lisbon", role: "place" }])
    expect(open.statement).toBe("Nike would open a store in Lisbon.")
  })

  it("resolves she/he to the person last acting and 'the company' to the organization last named", () => {
    const extraction = extractRules(
      document("Jane Smith met Mr. Brown in Paris. She signed the deal. Nokia sold its phones. The company hired Tom Becker.")
    )
    expect(rolesOf(extraction, eventOf(extraction, "sign"))).toEqual([{ name: "Jane Smith", role: "actor" }])
    expect(rolesOf(extraction, eventOf(extraction, "hire"))[0]).toEqual({ name: "Nokia", role: "actor" })
  })

  it("makes no event of a question, a state or a sentence without a verb", () => {
    const extraction = extractRules(document("Did Karen approve the budget? Karen loves Paris. Attendees: Karen Lee, Tom Becker"))
    expect(extraction.events).toEqual([])
    expect(entityNamed(extraction, "Karen Lee").kind).toBe("person")
  })

  it("keeps statements and descriptions within 300 characters", () => {
    const long = `Acme Corp acquired Globex in Berlin after ${"a very long and winding negotiation, ".repeat(12)}as reported.`
    const extraction = extractRules(document(long))
    expect(long.length).toBeGreaterThan(300)
    expect(eventOf(extraction, "acquire").statement.length).toBeLessThanOrEqual(300)
    for (const entity of extraction.entities) expect(entity.description!.length).toBeLessThanOrEqual(300)
  })

  it("refers only to entities it returns, each with a unique key", () => {
    const extraction = extractRules(
      document("Dr. Jane Smith met Mr. Brown of International Business Machines (IBM) in Paris. IBM opened a lab in Zurich.")
    )
    const keys = extraction.entities.map((entity) => entity.key)
    expect(new Set(keys).size).toBe(keys.length)
    for (const event of extraction.events) {
      for (const participant of event.participants) expect(keys).toContain(participant.entity)
      if (event.place !== null) expect(keys).toContain(event.place)
    }
  })

  it("lines that name nothing are not parsed, yet still teach which words are ordinary", () => {
    expect(entityNamed(extractRules(document("Kestrel won the award.")), "Kestrel").kind).toBe("other")
    const ordinary = extractRules(document("Kestrel won the award.\nwe watched a kestrel fly over the hills."))
    expect(ordinary.entities).toEqual([])
    expect(ordinary.events).toEqual([])
  })

  it("a line without a name still tells of the person or thing named before it", () => {
    const pronoun = extractRules(document("Ann Lee joined Acme.\nlater she founded a startup."))
    expect(rolesOf(pronoun, eventOf(pronoun, "found"))).toEqual([{ name: "Ann Lee", role: "actor" }])
    const described = extractRules(document("Acme Corp hired Ann Lee in May.\nthe company opened an office in town."))
    expect(rolesOf(described, eventOf(described, "open"))).toEqual([{ name: "Acme Corp", role: "actor" }])
  })
})

describe("extractRules: entity resolution within a document", () => {
  it("merges titles, possessives and a lone surname into one person", () => {
    const extraction = extractRules(
      document("Dr. Jane Smith met Mr. Brown in Paris. Smith's report was praised by the board. Later, Jane Smith flew to Rome.")
    )
    const smith = entityNamed(extraction, "Jane Smith")
    expect(smith.kind).toBe("person")
    expect(smith.aliases).toEqual(["Smith"])
    expect(smith.mentions).toBe(3)
    expect(smith.description).toBe("Dr. Jane Smith met Mr. Brown in Paris.")
    expect(entityNamed(extraction, "Brown").kind).toBe("person")
    expect(extraction.entities.filter((entity) => entity.kind === "person")).toHaveLength(2)
  })

  it("merges an acronym into the organization whose initials it spells", () => {
    const extraction = extractRules(
      document("International Business Machines (IBM) opened a lab in Zurich. IBM hired 40 researchers there.")
    )
    const ibm = entityNamed(extraction, "International Business Machines")
    expect(ibm.kind).toBe("organization")
    expect(ibm.aliases).toEqual(["IBM"])
    expect(ibm.mentions).toBe(3)
    expect(extraction.entities.filter((entity) => entity.kind === "organization")).toHaveLength(1)
  })

  it("merges an organization's short name and its name with a legal form", () => {
    const extraction = extractRules(document("Acme Corp bought Globex. Acme paid $2 billion."))
    const acme = entityNamed(extraction, "Acme Corp")
    expect(acme.aliases).toEqual(["Acme"])
    expect(rolesOf(extraction, eventOf(extraction, "pay"))[0]).toEqual({ name: "Acme Corp", role: "actor" })
  })

  it("keeps the person and the place of the same name apart", () => {
    const extraction = extractRules(document("Michael Jordan visited Jordan in 2019. Jordan thanked the fans in Amman."))
    const person = entityNamed(extraction, "Michael Jordan")
    const place = entityNamed(extraction, "Jordan")
    expect(person.kind).toBe("person")
    expect(place.kind).toBe("place")
    expect(rolesOf(extraction, eventOf(extraction, "visit"))).toEqual([
      { name: "Michael Jordan", role: "actor" },
      { name: "Jordan", role: "object" }
    ])
  })

  it("keeps two people who share a surname apart", () => {
    const extraction = extractRules(document("Anna Weber met Tom Weber in Munich."))
    expect(entityNamed(extraction, "Anna Weber").kind).toBe("person")
    expect(entityNamed(extraction, "Tom Weber").kind).toBe("person")
  })
})

describe("extractRules: chat messages", () => {
  it("makes the speaker the actor of a first-person sentence and anchors its relative time on the message", () => {
    const extraction = extractRules(chat(["Alice", "2024-05-08T10:00:00Z", "I'll send it next Tuesday."]))
    expect(entityNamed(extraction, "Alice").kind).toBe("person")
    const send = eventOf(extraction, "send")
    expect(rolesOf(extraction, send)).toEqual([{ name: "Alice", role: "actor" }])
    expect(send.time).toEqual({
      start: "2024-05-14T00:00:00.000Z",
      end: "2024-05-15T00:00:00.000Z",
      precision: "day",
      text: "next Tuesday",
      relative: true
    })
  })

  it("dates a message without a time expression at the message's own minute", () => {
    const extraction = extractRules(chat(["Bob", "2024-05-08T10:02:30Z", "I reviewed the Atlas release."]))
    expect(eventOf(extraction, "review").time).toEqual({
      start: "2024-05-08T10:02:00.000Z",
      end: "2024-05-08T10:03:00.000Z",
      precision: "minute",
      text: "",
      relative: false
    })
  })

  it("reads relative days on the speaker's calendar, not UTC's", () => {
    const extraction = extractRules(chat(["Mia", "2023-12-22T20:30:00-05:00", "We flew to Lisbon yesterday!"]))
    const fly = eventOf(extraction, "fly")
    expect(rolesOf(extraction, fly)[0]).toEqual({ name: "Mia", role: "actor" })
    expect(fly.time).toMatchObject({ start: "2023-12-21T00:00:00.000Z", precision: "day", relative: true })
  })

  it("reads a bare part of the day ('opening night') as no time beside a day ('tomorrow')", () => {
    const extraction = extractRules(chat(["Jon", "2023-06-19T10:04:00Z", "The official opening night is tomorrow."]))
    expect(eventOf(extraction, "be").time).toMatchObject({ start: "2023-06-20T00:00:00.000Z", text: "tomorrow" })
  })

  it("reads a clock time in the message's offset as an instant", () => {
    const extraction = extractRules(chat(["Bob", "2024-05-08T10:04:00+02:00", "I'm meeting Karen in Denver tomorrow at 3pm."]))
    expect(eventOf(extraction, "meet").time).toMatchObject({
      start: "2024-05-09T13:00:00.000Z",
      end: "2024-05-09T14:00:00.000Z",
      precision: "hour"
    })
  })

  it("reads how long something lasted as no time ('for two weeks'), and the time beside it", () => {
    const extraction = extractRules(chat(
      ["Tom", "2022-11-05T20:07:00Z", "I went back home for two weeks in October."],
      ["Tom", "2022-11-05T20:09:00Z", "We talked for an hour."]
    ))
    expect(eventOf(extraction, "go back").time).toMatchObject({ start: "2022-10-01T00:00:00.000Z", precision: "month" })
    expect(eventOf(extraction, "talk").time).toMatchObject({ start: "2022-11-05T20:09:00.000Z", precision: "minute" })
  })

  it("keeps a named subject as the actor and the speaker as a participant", () => {
    const extraction = extractRules(
      chat(["Alice", "2024-05-08T10:00:00Z", "Ok."], ["Bob", "2024-05-08T10:03:00Z", "Karen signed the contract yesterday."])
    )
    const sign = eventOf(extraction, "sign")
    expect(rolesOf(extraction, sign)).toEqual([{ name: "Karen", role: "actor" }, { name: "Bob", role: "participant" }])
    expect(sign.time).toMatchObject({ start: "2024-05-07T00:00:00.000Z", precision: "day" })
  })
})

describe("extractRules: times", () => {
  it("gives an unanchored relative expression no time, and an absolute one its time", () => {
    const extraction = extractRules(document("Acme Corp met Globex last Tuesday. Acme Corp was founded in 1999."))
    expect(eventOf(extraction, "meet").time).toBeNull()
    expect(eventOf(extraction, "found").time).toMatchObject({ start: "1999-01-01T00:00:00.000Z", precision: "year", relative: false })
  })

  it("resolves relative expressions against the document date", () => {
    const extraction = extractRules(
      document(
        "Acme Corp hired Maria Lopez last week. Globex opened an office in Lisbon next month. Initech sued Globex three months ago.",
        "2024-10-31"
      )
    )
    expect(eventOf(extraction, "hire").time).toMatchObject({
      start: "2024-10-21T00:00:00.000Z",
      end: "2024-10-28T00:00:00.000Z",
      precision: "week",
      relative: true
    })
    expect(eventOf(extraction, "open").time).toMatchObject({
      start: "2024-11-01T00:00:00.000Z",
      end: "2024-12-01T00:00:00.000Z",
      precision: "month"
    })
    expect(eventOf(extraction, "sue").time).toMatchObject({ start: "2024-07-01T00:00:00.000Z", precision: "month", relative: true })
  })

  it("counts 'two years later' from the previous event's time", () => {
    const extraction = extractRules(
      document("On March 3, 2021, Acme Corp acquired Globex. Two years later, Acme Corp closed the Globex offices.", "2024-01-01")
    )
    expect(eventOf(extraction, "close").time).toEqual({
      start: "2023-01-01T00:00:00.000Z",
      end: "2024-01-01T00:00:00.000Z",
      precision: "year",
      text: "Two years later",
      relative: true
    })
  })

  it("gives 'two years later' no time when no earlier event has one", () => {
    const extraction = extractRules(document("Two years later, Acme Corp closed the Globex offices.", "2024-01-01"))
    expect(eventOf(extraction, "close").time).toBeNull()
  })

  it("reads decades, quarters and months at their precision", () => {
    const extraction = extractRules(
      document("In the 1990s, Nokia dominated Europe. Acme Corp launched Atlas in Q3 2021. Globex hired Tom Becker in March 2020.")
    )
    expect(eventOf(extraction, "dominate").time).toMatchObject({ start: "1990-01-01T00:00:00.000Z", end: "2000-01-01T00:00:00.000Z", precision: "decade" })
    expect(eventOf(extraction, "launch").time).toMatchObject({ start: "2021-07-01T00:00:00.000Z", end: "2021-10-01T00:00:00.000Z", precision: "quarter" })
    expect(eventOf(extraction, "hire").time).toMatchObject({ start: "2020-03-01T00:00:00.000Z", end: "2020-04-01T00:00:00.000Z", precision: "month" })
  })

  it("a month named alone is a time only after a word that makes it one, not a name", () => {
    const at = "2023-05-08T12:00:00Z"
    // Without a time of its own, a message's event is at the message's time.
    const sent = { start: "2023-05-08T12:00:00.000Z", text: "" }
    const said = extractRules(chat(["Caroline", at, "April said she would call me."]))
    expect(entityNamed(said, "April").kind).toBe("person")
    expect(eventOf(said, "say").time).toMatchObject(sent)
    expect(eventOf(extractRules(chat(["Caroline", at, "I talked to June about the trip."])), "talk").time)
      .toMatchObject(sent)
    expect(eventOf(extractRules(chat(["Caroline", at, "I joined the March for Science."])), "join").time)
      .toMatchObject(sent)
    expect(eventOf(extractRules(chat(["Caroline", at, "We went camping in June."])), "go").time)
      .toMatchObject({ text: "June", precision: "month" })
  })

  it("moves a bare weekday to the side the verb's tense points to", () => {
    const extraction = extractRules(document("Jordan Peele arrived in Amman on Friday. Peele will visit Petra on Monday.", "2024-03-13"))
    expect(eventOf(extraction, "arrive").time).toMatchObject({ start: "2024-03-08T00:00:00.000Z", precision: "day" })
    expect(eventOf(extraction, "visit").time).toMatchObject({ start: "2024-03-18T00:00:00.000Z", precision: "day" })
  })

  it("tells apart clauses with times of their own: each event's statement is its clause", () => {
    const said = extractRules(chat([
      "Kenji Watanabe",
      "2021-06-16T10:15:00Z",
      "morning. sorry I'm slow today, got my second vaccine dose yesterday and my arm is killing me"
    ]))
    expect(eventOf(said, "get")).toMatchObject({
      statement: "Got my second vaccine dose yesterday",
      time: { start: "2021-06-15T00:00:00.000Z" }
    })
    expect(eventOf(said, "be")).toMatchObject({ statement: "Sorry I'm slow today", time: { start: "2021-06-16T00:00:00.000Z" } })
    // One time for the whole sentence: each event keeps the sentence.
    const whole = "I met Daan at the station and cycled to Texel yesterday."
    const once = extractRules(chat(["Kenji Watanabe", "2021-06-16T10:15:00Z", whole]))
    expect(once.events.map((event) => [event.kind, event.statement])).toEqual([["meet", whole], ["cycle", whole]])
  })

  it("a chat line without a time takes the one its next sentence opens with when that sentence has no verb", () => {
    // Sent on Sunday 25 June 2023.
    const at = "2023-06-25T17:40:00Z"
    const passed = extractRules(chat(["Adaeze Okafor", at, "I PASSED MY DRIVING TEST!!! Thursday morning, only two minors"]))
    expect(eventOf(passed, "pass").time).toMatchObject({ start: "2023-06-22T00:00:00.000Z", text: "Thursday morning" })
    // Not from further on: the 4th of September is the wedding's, not the booking's.
    const booked = extractRules(chat([
      "Elena Petrova",
      "2021-04-16T20:00:00Z",
      "We booked the wedding venue! Gut Lindenhof, a farm outside Berlin. 4th of September"
    ]))
    expect(eventOf(booked, "book").time).toMatchObject({ start: "2021-04-16T20:00:00.000Z", text: "" })
  })

  it("reads 'the 22nd of this month' as that day of the message's month; 'on the 17th' the next or last 17th", () => {
    const at = "2022-03-01T19:41:00Z"
    const when = (text: string, verb: string) => eventOf(extractRules(chat(["Harold Jensen", at, text])), verb).time
    expect(when("I have my cataract surgery on the 22nd of this month at St. Luke's.", "have"))
      .toMatchObject({ start: "2022-03-22T00:00:00.000Z", precision: "day" })
    expect(when("I fly to Rome on the 3rd of next month.", "fly")).toMatchObject({ start: "2022-04-03T00:00:00.000Z" })
    // February had no 30th: the month stands.
    expect(when("We met Tom on the 30th of last month.", "meet"))
      .toMatchObject({ start: "2022-02-01T00:00:00.000Z", precision: "month" })
    // "on the 17th" alone: the next 17th from the message's day, the last one for a past that is over.
    const on = (text: string, verb: string) =>
      eventOf(extractRules(chat(["Harold Jensen", "2023-08-19T00:52:00Z", text])), verb).time
    expect(on("I bought a console for my partner on the 17th and it's so much fun.", "buy"))
      .toMatchObject({ start: "2023-08-17T00:00:00.000Z", precision: "day", text: "on the 17th" })
    expect(on("I fly to Lagos on the 10th.", "fly")).toMatchObject({ start: "2023-09-10T00:00:00.000Z" })
    expect(on("I've booked a table at Nando's on the 28th.", "book"))
      .toMatchObject({ start: "2023-08-28T00:00:00.000Z" })
    // An ordinal before a noun is no date.
    expect(on("I fell on the 3rd floor.", "fall")).toMatchObject({ start: "2023-08-19T00:52:00.000Z", text: "" })
  })

  it("moves a month or day without a year to the side a past verb points to; 'last June' is over, 'next' ahead", () => {
    // Said on 20 May 2023: chrono's nearest June is June 2023, still to come.
    const at = "2023-05-20T12:00:00Z"
    const when = (text: string, verb: string) => eventOf(extractRules(chat(["Caroline", at, text])), verb).time
    expect(when("We moved to Boston in June.", "move"))
      .toMatchObject({ start: "2022-06-01T00:00:00.000Z", precision: "month" })
    expect(when("I met Tom on June 3.", "meet")).toMatchObject({ start: "2022-06-03T00:00:00.000Z", precision: "day" })
    expect(when("Last June we moved to Boston.", "move")).toMatchObject({ start: "2022-06-01T00:00:00.000Z" })
    expect(when("I visited Tom in May.", "visit")).toMatchObject({ start: "2023-05-01T00:00:00.000Z" })
    // A date an arrangement takes effect, or one a present perfect looks ahead to, stays.
    expect(when("Felix Braun resigned from the board effective June 1.", "resign"))
      .toMatchObject({ start: "2023-06-01T00:00:00.000Z" })
    expect(when("I've booked a table at Nando's on June 3.", "book")).toMatchObject({ start: "2023-06-03T00:00:00.000Z" })
    expect(when("I visit Tom in June.", "visit")).toMatchObject({ start: "2023-06-01T00:00:00.000Z" })
    // chrono's nearest February is February 2023, over.
    expect(when("Next February I meet Tom.", "meet")).toMatchObject({ start: "2024-02-01T00:00:00.000Z" })
    // chrono reads "May" alone only after "in".
    expect(when("Last May I visited Tom.", "visit"))
      .toMatchObject({ start: "2022-05-01T00:00:00.000Z", precision: "month" })
    expect(when("I will visit Tom next May.", "visit")).toMatchObject({ start: "2024-05-01T00:00:00.000Z" })
    expect(when("I visited Tom this May.", "visit")).toMatchObject({ start: "2023-05-01T00:00:00.000Z" })
  })
})

describe("extractRules: determinism", () => {
  it("returns the same extraction for the same input", () => {
    const input = chat(
      ["Alice", "2024-05-08T10:00:00Z", "I'll send the contract to Globex next Tuesday."],
      ["Bob", "2024-05-08T10:01:00Z", "Great. Karen from legal approved it yesterday, and Dr. Jane Smith signed in Berlin."]
    )
    const first = extractRules(input)
    const second = extractRules(input)
    expect(second).toEqual(first)
    expect(JSON.stringify(second)).toBe(JSON.stringify(first))
  })
})

describe("extractRules: entities in conversation", () => {
  const names = (extraction: Extraction) => extraction.entities.map((entity) => entity.name).sort()
  const at = (minute: number) => `2023-05-08T10:${String(minute).padStart(2, "0")}:00Z`

  it("makes no entity of greetings, interjections, thanks, pronouns, opening common words or bare adjectives", () => {
    const extraction = extractRules(chat(
      ["Caroline", at(0), "Thanks! That was such a good evening."],
      ["Melanie", at(1), "Glad you came. Cool venue too"],
      ["Caroline", at(2), "Absolutely!"],
      ["Melanie", at(3), "Here, I found the photos. Since then I have not stopped smiling"],
      ["Caroline", at(4), "Congrats!!"],
      ["Melanie", at(5), "Woohoo!"],
      ["Caroline", at(6), "Haha. Wow. That is amazing"],
      ["Melanie", at(7), "I PASSED MY DRIVING TEST THIS MORNING"]
    ))
    expect(names(extraction)).toEqual(["Caroline", "Melanie"])
  })

  it("makes no entity of chat interjections and shorthand, a time of day or a holiday, and reads a name after a contraction", () => {
    const extraction = extractRules(chat(
      ["Caroline", at(0), "Aww that's sweet."],
      ["Melanie", at(1), "Hmm, not sure. Umm ok"],
      ["Caroline", at(2), "Awww. How's Biscuit doing?"],
      ["Melanie", at(3), "Where's Oliver? Biscuit misses him"],
      ["Caroline", at(4), "Good Morning everyone!! Tonight we celebrate. June is coming too"],
      ["Melanie", at(5), "IDK, TBH I'm tired RN. Oh btw Happy New Year!! And happy Mother's Day to your mom"],
      ["Caroline", at(6), "Happy Pride Month!"]
    ))
    expect(names(extraction)).toEqual(["Biscuit", "Caroline", "June", "Melanie", "Oliver"])
    expect(entityNamed(extraction, "Biscuit").mentions).toBe(2)
  })

  it("makes no entity of an interjection before a comma, a contraction's word or an everyday opening word", () => {
    const extraction = extractRules(chat(
      ["Jon", at(0), "Oof, that's tough. Gotcha, Gina! Ahhahha, really!?"],
      ["Gina", at(1), "Woohoo, Jon! Yeah, Here's one I did last week."],
      ["Jon", at(2), "Life's been pretty wild lately. Success is almost here."],
      ["Gina", at(3), "Headingley, a little terrace near the cricket ground. Lisbon, Porto and Faro next!"],
      ["Jon", at(4), "Shadow is asleep. Coco and Shadow were out all day."]
    ))
    expect(names(extraction)).toEqual(["Coco", "Faro", "Gina", "Headingley", "Jon", "Lisbon", "Porto", "Shadow"])
    expect(entityNamed(extraction, "Shadow").mentions).toBe(2)
  })

  it("keeps a number closing a name in chat as part of it, not one counting what follows or a score", () => {
    const extraction = extractRules(chat(
      ["Nate", at(0), "I played Cyberpunk 2077 all night, then FIFA 23 with Tim."],
      ["Joanna", at(1), "I moved to Leeds 3 years ago. Tom 2, Jess 1 at darts!"]
    ))
    expect(names(extraction)).toEqual(["Cyberpunk 2077", "FIFA 23", "Jess", "Joanna", "Leeds", "Nate", "Tim", "Tom"])
    expect(entityNamed(extraction, "Cyberpunk 2077").kind).toBe("product")
  })

  it("makes no entity of an acronym a chat only writes as a modifier or in the plural", () => {
    const extraction = extractRules(chat(
      ["Caroline", at(0), "The LGBTQ+ community and LGBTQ folks were there. We play RPGs."],
      ["Melanie", at(1), "The CDC said so, and CDC guidance is clear. NASA engineers too."]
    ))
    expect(names(extraction)).toEqual(["CDC", "Caroline", "Melanie", "NASA"])
  })

  it("makes no entity of an acronym before a describing word, or after 'a', 'my', 'this new' (but a model)", () => {
    const extraction = extractRules(chat(
      ["Caroline", at(0), "I went to an LGBTQ+ counseling workshop. It's great to see how far LGBTQ rights came."],
      ["Melanie", at(1), "I got an RPG and my GF loved it. This new RPG is fun, and so is a gaming PC."],
      ["Caroline", at(2), "Glad you got some R&R. I got a PS5 and I work at the NHS. The NHS says hi."]
    ))
    expect(names(extraction)).toEqual(["Caroline", "Melanie", "NHS", "PS5"])
  })

  it("makes no entity of a word opening a sentence again after an interjection and a comma, or before 'I'", () => {
    const extraction = extractRules(chat(
      ["Tim", at(0), "Wow, Congrats on those deals with Nike! Oof, Hang in there."],
      ["John", at(1), "I do yoga. Afterward, I'm more alert. Haha, Jess is coming too."]
    ))
    expect(names(extraction)).toEqual(["Jess", "John", "Nike", "Tim"])
  })

  it("makes no entity of a language alone, nor of lower-case words from someone who writes in capitals", () => {
    const extraction = extractRules(chat(
      ["Tim", at(0), "I know a bit of Spanish. My English lit class was hard. [a photo: a captain america costume]"],
      ["John", at(1), "I`m learning Japanese in Toronto."]
    ))
    expect(names(extraction)).toEqual(["John", "Tim", "Toronto"])
  })

  it("makes no entity of a noun a chat also writes in lower case, a nationality's kind of thing, a sign-off", () => {
    const extraction = extractRules(chat(
      ["Audrey", at(0), "We had Sushi with Pepper at Fox Hollow. Ttyl, Bye!"],
      ["Andrew", at(1), "I love sushi! I cooked with Mediterranean flavors and wrote about a Midwestern town."],
      ["Audrey", at(2), "Our two German Shepherds sniffed the Peruvian Lilies."]
    ))
    expect(names(extraction)).toEqual(["Andrew", "Audrey", "Fox Hollow", "Pepper"])
  })

  it("keeps a title's subtitle after a colon, and two known organisations joined by 'and' apart", () => {
    const extraction = extractRules(chat(
      ["Nate", at(0), "I play Animal Crossing: New Horizons. The game was Counter-Strike: Global Offensive!"],
      ["Tim", at(1), "I signed deals with Nike and Gatorade."]
    ))
    expect(names(extraction)).toEqual(
      ["Animal Crossing: New Horizons", "Counter-Strike: Global Offensive", "Gatorade", "Nate", "Nike", "Tim"]
    )
    expect(entityNamed(extraction, "Animal Crossing: New Horizons").kind).toBe("work")
  })

  it("makes no entity of a role written in capitals after 'a'", () => {
    const extraction = extractRules(chat(
      ["Andrew", at(0), "I started a new job as a Financial Analyst last week."],
      ["Audrey", at(1), "She is a Software Engineer at Google, and a Tom Hanks fan."]
    ))
    expect(names(extraction)).toEqual(["Andrew", "Audrey", "Google", "Tom Hanks"])
  })

  it("reads a month capitalised inside a sentence as a date, not as a name opening another sentence", () => {
    const extraction = extractRules(chat(
      ["Audrey", at(0), "Last August I told you about the trip to Fox Hollow."],
      ["Andrew", at(1), "August's been eventful. We went back to Fox Hollow."]
    ))
    expect(names(extraction)).toEqual(["Andrew", "Audrey", "Fox Hollow"])
  })

  it("keeps a lower-case particle inside a name ('Rio de Janeiro') and a capitalised 'X of Y' whole", () => {
    const extraction = extractRules(chat(
      ["Calvin", at(0), "We flew to Rio de Janeiro last week and saw the Leonardo da Vinci show."],
      ["Dave", at(1), "How do Tom and Jess like it? We watched Game of Thrones at the House of Blues."],
      ["Calvin", at(2), "Tom of Leeds says hi."]
    ))
    expect(names(extraction)).toEqual([
      "Calvin", "Dave", "Game of Thrones", "House of Blues", "Jess", "Leeds", "Leonardo da Vinci", "Rio de Janeiro",
      "Tom"
    ])
  })

  it("reads a title in single quotes as one work, and a one-word term in them as nothing", () => {
    const extraction = extractRules(chat(
      ["Caroline", at(0), "Here's one- 'Embracing Identity' is all about finding comfort. It's Melanie's favourite."],
      ["Melanie", at(1), "Our group, ‘Connected LGBTQ Activists’, meets on Fridays."],
      ["Caroline", at(2), "They call it ‘outreach’ and it's 'fun'."]
    ))
    expect(names(extraction)).toEqual(["Caroline", "Connected LGBTQ Activists", "Embracing Identity", "Melanie"])
    expect(entityNamed(extraction, "Embracing Identity").kind).toBe("work")
  })

  it("ends a one-word name at its possessive before a known place or person, not before other words or inside a longer name", () => {
    const extraction = extractRules(chat(
      ["Caroline", at(0), "Yesterday Marco's Paris flat was great."],
      ["Melanie", at(1), "I think Caroline's Lisbon trip got cancelled."],
      ["Caroline", at(2), "Mel's mom works at St. Luke's Hospital."],
      ["Melanie", at(3), "Then pizza at Joe's Pizza, and oat milk from Trader Joe's Market?"]
    ))
    expect(names(extraction)).toEqual([
      "Caroline", "Joe's Pizza", "Lisbon", "Marco", "Melanie", "Paris", "St. Luke's Hospital", "Trader Joe's Market"
    ])
    expect(entityNamed(extraction, "Caroline").mentions).toBe(2 + 1)
  })

  it("takes the name out of a vocative and joins a short form to the one speaker it fits", () => {
    const extraction = extractRules(chat(
      ["Caroline", at(0), "Thanks Mel, the painting is lovely"],
      ["Melanie", at(1), "Congrats Caroline! You earned it"],
      ["Caroline", at(2), "Haha Mel stop"],
      ["Caroline", at(2), "Afternoon Mel!"],
      ["Melanie", at(3), "CAROLINE!!"]
    ))
    expect(names(extraction)).toEqual(["Caroline", "Melanie"])
    expect(entityNamed(extraction, "Melanie").aliases).toEqual(["Mel"])
    expect(entityNamed(extraction, "Melanie").kind).toBe("person")
    expect(entityNamed(extraction, "Melanie").mentions).toBe(2 + 3)
  })

  it("makes each speaker a person, also from 'Name:' labels of a chunk holding several messages", () => {
    const extraction = extractRules({
      title: "session",
      documentDate: null,
      chunks: [{
        ordinal: 0,
        speaker: null,
        spokenAt: at(0),
        text: "Priya Nair: Guess what, I got the Leeds job!\n\nThomas Becker: No way. Congrats Pri\n\n" +
          "Priya Nair: Thanks Tom\n\nThomas Becker: Tommyyy is proud of you"
      }]
    })
    expect(entityNamed(extraction, "Priya Nair").kind).toBe("person")
    expect(entityNamed(extraction, "Priya Nair").aliases).toEqual(["Pri"])
    expect(entityNamed(extraction, "Thomas Becker").kind).toBe("person")
    expect([...entityNamed(extraction, "Thomas Becker").aliases].sort()).toEqual(["Tom", "Tommyyy"])
    expect(entityNamed(extraction, "Leeds").kind).toBe("place")
    expect(names(extraction)).toEqual(["Leeds", "Priya Nair", "Thomas Becker"])
    const got = extraction.events.find((event) => event.kind === "get")
    expect(got?.participants[0]).toEqual({ entity: entityNamed(extraction, "Priya Nair").key, role: "actor" })
  })

  it("reads meeting notes' first-name labels as the attendees named in full, also a label used once", () => {
    const extraction = extractRules({
      title: "Weekly sync",
      documentDate: "2024-03-14T00:00:00Z",
      chunks: [{
        ordinal: 0,
        speaker: null,
        spokenAt: null,
        text: "Attendees: Laura Chen, Marcus Bell, Aisha Rahman, Marcus Ortiz\n\n" +
          "Laura: Budget for Q2 is approved.\nMarcus: The Atlas migration finished last Friday.\n" +
          "Aisha: Customer escalations are down since February.\nLaura: Thanks everyone!\nMarcus: Bye."
      }]
    })
    // Two attendees are called Marcus: the label stays apart from both.
    expect(names(extraction)).toEqual(["Aisha Rahman", "Atlas", "Laura Chen", "Marcus", "Marcus Bell", "Marcus Ortiz"])
    expect(entityNamed(extraction, "Laura Chen").mentions).toBe(1 + 2)
    expect(entityNamed(extraction, "Aisha Rahman").mentions).toBe(1 + 1)
    // A sender's name given with the message is not a label: Taylor is not Taylor Swift.
    const fan = extractRules(chat(["Taylor", at(0), "I saw Taylor Swift last night!"], ["Jo", at(1), "Lucky you, Taylor"]))
    expect(names(fan)).toEqual(["Jo", "Taylor", "Taylor Swift"])
  })

  it("joins nicknames to the one person whose first name they fit (Deb → Deborah, Hal → Harold, Lena → Elena)", () => {
    const extraction = extractRules(chat(
      ["Deborah Okafor", at(0), "Harold Jensen and Elena Petrova are coming on Sunday"],
      ["Chidi Okafor", at(1), "Deb, is Hal bringing the dog? Lena said she would"],
      ["Deborah Okafor", at(2), "Hal is, yes"]
    ))
    expect(entityNamed(extraction, "Deborah Okafor").aliases).toEqual(["Deb"])
    expect(entityNamed(extraction, "Harold Jensen").aliases).toEqual(["Hal"])
    expect(entityNamed(extraction, "Elena Petrova").aliases).toEqual(["Lena"])
    expect(names(extraction)).toEqual(["Chidi Okafor", "Deborah Okafor", "Elena Petrova", "Harold Jensen"])
  })

  it("leaves a short form that fits two people alone, and keeps two people who share a first name apart", () => {
    const extraction = extractRules(chat(
      ["Priya Nair", at(0), "Sam Hollis from work and my cousin Samira both ran the Bath Half"],
      ["Thomas Becker", at(1), "Which Sam beat you?"],
      ["Priya Nair", at(2), "Uncle Emeka met Emeka Obi at church"]
    ))
    expect(entityNamed(extraction, "Sam Hollis").aliases).toEqual([])
    expect(entityNamed(extraction, "Samira").aliases).toEqual([])
    expect(entityNamed(extraction, "Sam").kind).not.toBe("organization")
    expect(entityNamed(extraction, "Uncle Emeka").key).not.toBe(entityNamed(extraction, "Emeka Obi").key)
  })

  it("reads kinds from the words around a name: kin, going to and from, watching and reading, a business's head word", () => {
    const extraction = extractRules(chat(
      ["Deborah Okafor", at(0), "My sister Ngozi drove up to Brunswick yesterday"],
      ["Chidi Okafor", at(1), "We watched Aftersun after the appointment at Kirkstall Vets"],
      ["Deborah Okafor", at(2), "Ngozi is back from Onitsha on Friday"]
    ))
    expect(entityNamed(extraction, "Ngozi").kind).toBe("person")
    expect(entityNamed(extraction, "Brunswick").kind).toBe("place")
    expect(entityNamed(extraction, "Onitsha").kind).toBe("place")
    expect(entityNamed(extraction, "Aftersun").kind).toBe("work")
    expect(entityNamed(extraction, "Kirkstall Vets").kind).toBe("organization")
  })

  it("reads names from people who write in lower case: known places and first names, speakers' short forms", () => {
    const extraction = extractRules(chat(
      ["Aisha Rahman", at(0), "ok first week in toronto survived"],
      ["Diego Alvarez", at(1), "proud of u aish. my flat is a mess, alex says hi"],
      ["Aisha Rahman", at(2), "lmaooo thanks dieg"]
    ))
    expect(entityNamed(extraction, "toronto").kind).toBe("place")
    expect(entityNamed(extraction, "alex").kind).toBe("person")
    expect(entityNamed(extraction, "Aisha Rahman").aliases).toEqual(["aish"])
    expect(entityNamed(extraction, "Diego Alvarez").aliases).toEqual(["dieg"])
    expect(names(extraction)).toEqual(["Aisha Rahman", "Diego Alvarez", "alex", "toronto"])
  })

  it("takes a speaker's name closing a name for a vocative", () => {
    const extraction = extractRules(chat(
      ["Kenji Watanabe", at(0), "Congrats on the move"],
      ["Lucía Fernández", at(1), "Thanks! Dublin is lovely"],
      ["Kenji Watanabe", at(2), "Welcome to Ireland Lu"]
    ))
    expect(names(extraction)).toEqual(["Dublin", "Ireland", "Kenji Watanabe", "Lucía Fernández"])
    expect(entityNamed(extraction, "Lucía Fernández").aliases).toEqual(["Lu"])
  })

  it("reads a meeting note's people, roles and organizations", () => {
    const extraction = extractRules(document(
      "Weekly sync\nPriya Nair, Head of Operations at Acme, said the Lisbon launch moves to June.\n" +
        "Jonas Berg, Director of Finance, will send the Globex contract."
    ))
    expect(entityNamed(extraction, "Priya Nair").kind).toBe("person")
    expect(entityNamed(extraction, "Jonas Berg").kind).toBe("person")
    expect(entityNamed(extraction, "Acme").kind).toBe("organization")
    expect(entityNamed(extraction, "Lisbon").kind).toBe("place")
    expect(names(extraction)).not.toContain("Head")
    expect(names(extraction)).not.toContain("Operations")
    expect(names(extraction)).not.toContain("Finance")
  })
})

/** One chunk holding several messages, as the chunker packs a conversation: each message has its own time. */
const packed = (...messages: ReadonlyArray<readonly [speaker: string, spokenAt: string, text: string]>): ExtractionInput => {
  let text = ""
  const spans: Array<{ speaker: string; spokenAt: string; start: number; end: number }> = []
  for (const [speaker, spokenAt, content] of messages) {
    if (text !== "") text += "\n\n"
    const start = text.length
    text += `${speaker}: ${content}`
    spans.push({ speaker, spokenAt, start, end: text.length })
  }
  return {
    title: "chat",
    documentDate: null,
    chunks: [{ ordinal: 0, text, speaker: null, spokenAt: spans[0]!.spokenAt, messages: spans }]
  }
}

describe("messages packed in one chunk", () => {
  const extraction = extractRules(packed(
    ["Ana Duarte", "2026-02-03T09:00:00.000Z", "Booked the flights for the Lisbon offsite."],
    ["Ben Okoro", "2026-02-09T08:30:00.000Z", "I deployed the new load balancer this morning."],
    ["Ana Duarte", "2026-02-11T17:00:00.000Z", "We adopted a dog last year. First walk together was yesterday."]
  ))
  const event = (words: string) => {
    const found = extraction.events.find((e) => e.statement.includes(words))
    expect(found, words).toBeDefined()
    return found!
  }

  it("resolves each message's relative times against its own time, with its speaker as the actor", () => {
    const balancer = event("load balancer")
    expect(balancer.time?.start.slice(0, 10)).toBe("2026-02-09")
    expect(rolesOf(extraction, balancer)).toContainEqual({ name: "Ben Okoro", role: "actor" })
    const dog = event("adopted a dog")
    expect([dog.time?.start, dog.time?.precision]).toEqual(["2025-01-01T00:00:00.000Z", "year"])
    expect(rolesOf(extraction, dog)).toContainEqual({ name: "Ana Duarte", role: "actor" })
  })

  it("a date without a year is the next one when the message speaks of the future, the last one otherwise", () => {
    const said = extractRules(packed(
      ["Ana Duarte", "2026-03-10T09:00:00.000Z", "We are going to visit Porto in October."],
      ["Ben Okoro", "2026-03-11T09:00:00.000Z", "I visited Porto in October."],
      ["Ana Duarte", "2026-03-12T09:00:00.000Z", "I will finish the thesis on June 3."]
    ))
    const when = (words: string) => said.events.find((e) => e.statement.includes(words))?.time?.start.slice(0, 10)
    expect(when("going to visit Porto")).toBe("2026-10-01")
    expect(when("I visited Porto")).toBe("2025-10-01")
    expect(when("finish the thesis")).toBe("2026-06-03")
  })

  it("a 'be' with a time in a chat message is an event of that time", () => {
    const walk = event("First walk together was yesterday")
    expect(walk.time?.start.slice(0, 10)).toBe("2026-02-10")
  })
})

describe("extractRules: the kind a sentence gives a name", () => {
  const kindOf = (text: string, name: string) => entityNamed(extractRules(document(text)), name).kind

  it("a saint's name in the possessive is an institution", () => {
    expect(kindOf("My scan is at St Anne's on Friday.", "St Anne")).toBe("organization")
  })

  it("a name an indefinite article introduces, closing its phrase, is a product", () => {
    expect(kindOf("I finally bought a used Honda Civic, grey.", "Honda Civic")).toBe("product")
    expect(kindOf("She gave me a Kobo for my birthday.", "Kobo")).toBe("product")
  })

  it("a first name after 'in' or a verb of motion is a place, unless possessive", () => {
    expect(kindOf("They rented a flat in Adelaide last year.", "Adelaide")).toBe("place")
    expect(kindOf("Next week we fly to Charlotte.", "Charlotte")).toBe("place")
    expect(kindOf("The baby slept in Kolya's arms.", "Kolya")).not.toBe("place")
  })

  it("a name after a capitalised 'The' is no person", () => {
    expect(kindOf("Last night I watched The King's Speech again.", "King's Speech")).toBe("work")
  })

  it("the name after a pet's animal is the pet's, not a person's", () => {
    expect(kindOf("Yesterday my dog Luna ate my socks.", "Luna")).toBe("other")
  })

  it("an apposition's noun, a noun after the name or before 'called' gives the kind", () => {
    expect(kindOf("We stayed at Oakridge, a small farm near the coast.", "Oakridge")).toBe("place")
    expect(kindOf("I volunteer at the Greenleaf shelter on Sundays.", "Greenleaf")).toBe("organization")
    expect(kindOf("There is a pub called The Crooked Lantern near us.", "Crooked Lantern")).toBe("organization")
  })

  it("a name after a preposition of place and 'the', or far after a verb of motion, is a place", () => {
    expect(kindOf("On Sunday we ran along the Kessel for an hour.", "Kessel")).toBe("place")
    expect(kindOf("We will sail all the way up to Hammerfjell.", "Hammerfjell")).toBe("place")
  })
})
