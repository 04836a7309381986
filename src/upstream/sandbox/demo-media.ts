/** The photo a simulated customer sends when none is given: an 8x8 PNG, a coffee-brown square. */
export const DEMO_IMAGE = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAgAAAAICAIAAABLbSncAAAAEUlEQVR4nGPI9zPHihiGlgQA5CE9AdlvgpMAAAAASUVORK5CYII=",
  "base64",
);
