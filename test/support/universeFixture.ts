/**
 * Two unrelated worlds for the universe tests: the board meetings of a company and a football club's season.
 * Priya Raman, a board member, also sponsors the club: the one person in both.
 */
export const boardMeetings: ReadonlyArray<{ readonly title: string; readonly text: string }> = [
  {
    title: "Board meeting, January",
    text: "On 12 January 2023, Helen Marsh chaired the board of Northwind Holdings in Oslo. " +
      "Victor Lang presented the budget and Priya Raman questioned Victor Lang."
  },
  {
    title: "Board meeting, March",
    text: "On 9 March 2023, Helen Marsh and Victor Lang reviewed the audit of Northwind Holdings with Priya Raman. " +
      "Victor Lang thanked Helen Marsh."
  },
  {
    title: "Board meeting, May",
    text: "On 4 May 2023, Priya Raman proposed a merger of Northwind Holdings with Eastgate Capital. " +
      "Helen Marsh and Victor Lang approved the merger with Eastgate Capital."
  }
]

export const footballSeason: ReadonlyArray<{ readonly title: string; readonly text: string }> = [
  {
    title: "Matchday 1",
    text: "On 20 August 2023, Marco Silva scored twice for Riverside Rovers against Harbor United. " +
      "Dana Okafor praised Marco Silva and Tom Reyes."
  },
  {
    title: "Training camp",
    text: "On 3 September 2023, Dana Okafor trained Marco Silva and Tom Reyes at Riverside Park. " +
      "Tom Reyes beat Marco Silva in the sprint."
  },
  {
    title: "Matchday 3",
    text: "On 17 September 2023, Riverside Rovers lost to Harbor United. Tom Reyes injured his knee and " +
      "Dana Okafor replaced Tom Reyes with Marco Silva."
  }
]

/** The bridge: a board member sponsors the club. */
export const sponsorship = {
  title: "Sponsorship",
  text: "On 1 October 2023, Priya Raman sponsored Riverside Rovers and met Dana Okafor."
}
