// The header limit is enforced by the server and stated by the OpenAPI document. It lives apart from both:
// the document's modules importing the server closed a circle through the app that serves the document.

/** Node's default, made explicit: the request line and headers together. */
export const MAX_HEADER_BYTES = 16 * 1024;
