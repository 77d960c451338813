// The two ways a name or a value of ours enters SQL text. Everything a client sends is bound as a
// parameter instead (query/compile.ts); these are for what the project itself names: catalog columns and
// tables, file paths, organization names read from our own manifests.

/** A catalog identifier, quoted. Catalog names are snake_case; refusing anything else keeps a catalog typo from becoming SQL. */
export const ident = (name: string) => {
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`not a catalog identifier: ${name}`);
  return `"${name}"`;
};

/** A string literal: a path or a name of ours, its quotes doubled. */
export const sqlLiteral = (text: string) => `'${text.replace(/'/g, "''")}'`;
