import type { Mail } from "./mailer.js";

/**
 * The texts of the product's mails. Each carries one link, built on
 * PUBLIC_URL: the console's page for it, or the API route that acts on it.
 */

const sign = "\n\n-- \nwa-inbox\n";

export function invitationMail(input: {
  to: string;
  accountName: string;
  inviterName: string;
  link: string;
  expiresAt: Date;
}): Mail {
  return {
    kind: "invitation",
    to: input.to,
    subject: `${input.inviterName} invited you to ${input.accountName} on wa-inbox`,
    link: input.link,
    text:
      `${input.inviterName} invited you to join ${input.accountName}, a shared WhatsApp inbox.\n\n` +
      `Open this link, then sign up or sign in with this email address (${input.to}) to accept:\n\n` +
      `${input.link}\n\n` +
      `The invitation is valid until ${input.expiresAt.toUTCString()}. ` +
      `The link proves that you received this mail: do not forward it.${sign}`,
  };
}

export function passwordResetMail(input: { to: string; link: string; validFor: string }): Mail {
  return {
    kind: "password-reset",
    to: input.to,
    subject: "Reset your wa-inbox password",
    link: input.link,
    text:
      "Someone (hopefully you) asked to reset the password of the wa-inbox user with this email address.\n\n" +
      `Choose a new password here (within ${input.validFor}, once):\n\n${input.link}\n\n` +
      "Every session of the user ends when the password is reset. " +
      `If you did not ask for this, ignore this mail: your password stays as it is.${sign}`,
  };
}

export function verificationMail(input: { to: string; link: string; validFor: string }): Mail {
  return {
    kind: "email-verification",
    to: input.to,
    subject: "Confirm your email address for wa-inbox",
    link: input.link,
    text:
      `Open this link to confirm that ${input.to} is yours (within ${input.validFor}):\n\n` +
      `${input.link}\n\n` +
      `If you did not sign up for wa-inbox, ignore this mail.${sign}`,
  };
}
