/** The HTTP status docker-modem puts on an engine error (404 gone, 304 not modified, 409 conflict). */
export function dockerStatus(error: unknown): number | undefined {
  return (error as { statusCode?: number } | undefined)?.statusCode;
}
