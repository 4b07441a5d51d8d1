import type { Config } from '../config/index.js';
import type { VoiceProvider } from './provider.js';
import { SimulatorProvider } from './simulator.js';
import { SipTrunkProvider } from './sipTrunk.js';

export type { PlaceCallRequest, PlacedCall, SimulatedCallPlan, VoiceProvider } from './provider.js';

/** The voice provider named by VOICE_PROVIDER. */
export function createVoiceProvider(config: Pick<Config, 'VOICE_PROVIDER' | 'SIMULATOR_CALL_SECONDS' | 'DEFAULT_PHONE_REGION' | 'SIP_RING_TIMEOUT_SECONDS'>): VoiceProvider {
  switch (config.VOICE_PROVIDER) {
    case 'simulator':
      return new SimulatorProvider(config.SIMULATOR_CALL_SECONDS, config.DEFAULT_PHONE_REGION);
    case 'sip':
      return new SipTrunkProvider(config.SIP_RING_TIMEOUT_SECONDS);
    default:
      throw new Error(`unknown voice provider ${String(config.VOICE_PROVIDER)}`);
  }
}
