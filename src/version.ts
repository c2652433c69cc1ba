/** The harness version; a container made by another version is recreated, not reused. */
export const HARNESS_VERSION = "0.1.0";
