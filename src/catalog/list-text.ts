// A list field's text from its elements (interface §3: joined with ', ' in the elements' order, null when
// there are none): the one expression the catalog declares list fields with and the loader stores them by.
export const listTextSql = (members: string) => `array_to_string(${members}, ', ')`;
