import { newId } from '@ots/shared/ids';

/** A made-up account id: the orders schema keeps no account table, it only scopes by the id. */
export const someAccount = (): string => newId();
